package engine

import (
	"path/filepath"
	"slices"
	"strings"
)

// nestingOrder orders items by where their volume_mount destinations lie, keeping their order
// otherwise: with outerFirst, one whose destination is below another's comes after it (binding:
// the outer mount is made first, and the inner on the outer volume's directory); without, before
// it (unbinding: an outer mount with one below it cannot be unmounted, EBUSY). Items whose
// destinations nest both ways (a cycle) keep their order, broken at one of them (not at an item
// outside the cycle that waits on it), and bind refuses the one that would hide another. It is a topological sort over the nesting (nestGraph), O(n log n) in the
// destinations: a group of a thousand allocs is ordered on every pass.
func nestingOrder[T any](items []T, dests func(T) []string, outerFirst bool) []T {
	order, _ := newNestGraph(len(items), func(i int) []string { return dests(items[i]) }).sort(outerFirst)
	out := make([]T, len(order))
	for k, i := range order {
		out[k] = items[i]
	}
	return out
}

// nestingDepths are, for n items, how deep each one's volume_mounts lie below the others':
// 0 for one with no destination below another item's, else one more than the deepest item a
// destination of it lies directly below. Items of one depth can be bound in any order, and in
// parallel, once every item of a smaller depth is (restore's phases).
func nestingDepths(n int, dests func(int) []string) []int {
	_, depth := newNestGraph(n, dests).sort(true)
	return depth
}

// nestGraph is the nesting of n items' destinations: the distinct destinations (paths), sorted
// by their components, each with its nearest enclosing destination (parent), and each item's. An item waits on a path until every item at it but itself is done: outer first,
// the parent path of each of its destinations; inner first, each of its destinations' strict
// subtree (counted in incidences, item and destination).
type nestGraph struct {
	n      int
	paths  []string
	parent []int   // by path; -1 at a root
	of     [][]int // by item: its paths, each once
	nodes  int     // steps taken building and sorting (a test bounds them)
}

func newNestGraph(n int, dests func(int) []string) *nestGraph {
	g := &nestGraph{n: n, of: make([][]int, n)}
	type inc struct {
		key, path string
		item      int
	}
	var incs []inc
	for i := range n {
		for _, d := range dests(i) {
			d = filepath.Clean(d)
			incs = append(incs, inc{strings.ReplaceAll(d, "/", "\x00"), d, i})
		}
	}
	// Sorted by components ("/a" < "/a/b" < "/a-b"), so a path's enclosing paths come before it,
	// and a stack of them finds its nearest one.
	slices.SortStableFunc(incs, func(a, b inc) int { return strings.Compare(a.key, b.key) })
	g.nodes += len(incs)
	var stack []int
	for _, c := range incs {
		p := len(g.paths) - 1
		if p < 0 || g.paths[p] != c.path {
			for len(stack) > 0 && !under(c.path, g.paths[stack[len(stack)-1]]) {
				stack = stack[:len(stack)-1]
				g.nodes++
			}
			parent := -1
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			g.paths = append(g.paths, c.path)
			g.parent = append(g.parent, parent)
			p = len(g.paths) - 1
			stack = append(stack, p)
		}
		if own := g.of[c.item]; len(own) == 0 || own[len(own)-1] != p {
			g.of[c.item] = append(own, p)
		}
	}
	return g
}

// sort is the items' order (outerFirst, or inner first), the smallest listed index first among
// those free to go; when none is (a cycle), the smallest listed index on a cycle goes
// (cycleSearch.pick), not the smallest waiting, which may be outside the cycle, waiting on it. depth is each
// item's nesting depth in that order (nestingDepths; outer first only).
func (g *nestGraph) sort(outerFirst bool) (order, depth []int) {
	// left[p] counts the incidences not yet done that an item waiting on p waits for; a waiter
	// of p is released when left[p] falls to its own share of it (its own incidences there).
	left := make([]int, len(g.paths))
	waiters := make([]map[int][]int, len(g.paths)) // by path, then own share: the items
	pending := make([]int, g.n)
	contributes := make([][]int, g.n) // by item: the counts its incidences are part of
	var waits [][]int                 // by item: the paths it waits on (outer first, for depth)
	if outerFirst {
		waits = make([][]int, g.n)
	}
	for i, ps := range g.of {
		var on []int
		for _, p := range ps {
			if outerFirst {
				contributes[i] = append(contributes[i], p)
				if q := g.parent[p]; q >= 0 && !slices.Contains(on, q) {
					on = append(on, q)
				}
				continue
			}
			if !slices.Contains(on, p) {
				on = append(on, p)
			}
			for q := g.parent[p]; q >= 0; q = g.parent[q] {
				contributes[i] = append(contributes[i], q)
				g.nodes++
			}
		}
		for _, q := range contributes[i] {
			left[q]++
		}
		if outerFirst {
			waits[i] = on
		}
		for _, q := range on {
			own := 0
			for _, c := range contributes[i] {
				if c == q {
					own++
				}
			}
			if waiters[q] == nil {
				waiters[q] = map[int][]int{}
			}
			waiters[q][own] = append(waiters[q][own], i)
		}
	}
	for q, byOwn := range waiters {
		for own, items := range byOwn {
			if left[q] > own {
				for _, i := range items {
					pending[i]++
				}
			}
		}
	}
	done := make([]bool, g.n)
	var ready indexHeap
	for i := range g.n {
		if pending[i] == 0 {
			ready.push(i)
		}
	}
	depth = make([]int, g.n)
	deepest := make([]int, len(g.paths)) // by path: the deepest item done there, plus one
	order = make([]int, 0, g.n)
	next := 0            // the smallest index that may still be waiting (a cycle's next to go)
	var cyc *cycleSearch // built at the first cycle, once per sort
	for len(order) < g.n {
		var i int
		if len(ready) > 0 {
			i = ready.pop()
			if done[i] {
				continue
			}
		} else {
			for done[next] {
				next++
			}
			if cyc == nil {
				cyc = g.newCycleSearch()
			}
			i = cyc.pick(next, done, waits)
		}
		done[i] = true
		order = append(order, i)
		if outerFirst {
			for _, q := range waits[i] {
				depth[i] = max(depth[i], deepest[q])
			}
			for _, p := range g.of[i] {
				deepest[p] = max(deepest[p], depth[i]+1)
			}
		}
		for _, q := range contributes[i] {
			left[q]--
			g.nodes++
			for _, w := range waiters[q][left[q]] {
				g.nodes++
				if pending[w]--; pending[w] == 0 && !done[w] {
					ready.push(w)
				}
			}
		}
	}
	return order, depth
}

// cycleSearch is what pick, the item to go when every item left waits, searches with: the
// items at each path, each path's children, and Tarjan's marks by node (items 0..n-1, then
// paths). It is built once per sort (newCycleSearch, counted in g.nodes), and each pick resets
// only the marks of the nodes it visited: k disjoint cycles cost what they hold, not k times the
// sort's size (16,000 items in 8,000 cycles took 20 s when each pick built it again).
type cycleSearch struct {
	g          *nestGraph
	at         [][]int // by path: the items with a destination there
	children   [][]int
	index, low []int // -1: not visited by the current pick
	onStack    []bool
	visited    []int // the nodes the current pick marked, to reset
}

func (g *nestGraph) newCycleSearch() *cycleSearch {
	c := &cycleSearch{g: g, at: make([][]int, len(g.paths)), children: make([][]int, len(g.paths))}
	for i, ps := range g.of {
		for _, p := range ps {
			c.at[p] = append(c.at[p], i)
			g.nodes++
		}
	}
	for p, q := range g.parent {
		if q >= 0 {
			c.children[q] = append(c.children[q], p)
		}
		g.nodes++
	}
	nodes := g.n + len(g.paths)
	c.index, c.low, c.onStack = make([]int, nodes), make([]int, nodes), make([]bool, nodes)
	for v := range c.index {
		c.index[v] = -1
	}
	g.nodes += nodes
	return c
}

// pick is the item to go when every item left waits (a cycle of destinations nesting both
// ways): the smallest listed index of a cycle that waits on no item outside it (a sink of the
// strongly connected components of the waits), found by a depth-first search from start, the
// smallest index left. The smallest index left may lie outside every cycle, waiting on one (an
// outer claim's unbind before the claims below it, EBUSY; an inner claim's bind before those
// above it, hidden by them), or on a cycle that itself waits on another. The search runs over
// the items left and the paths (each path standing for the items at it, and inner first for
// those below it too), so it costs what it reaches, not the pairs of items; cycles are rare
// (bind refuses the claim that would hide another). waits is sort's (outer first; nil inner
// first).
func (c *cycleSearch) pick(start int, done []bool, waits [][]int) int {
	g := c.g
	defer func() {
		for _, v := range c.visited {
			c.index[v], c.onStack[v] = -1, false
		}
		c.visited = c.visited[:0]
	}()
	// Nodes: items 0..n-1, then paths. An item waits on paths: outer first, the nearest
	// enclosing destination of each of its own; inner first, the children of each of its own
	// (what lies strictly below it). A path leads to the items left at it, and inner first to
	// its children.
	succ := func(v int, each func(int)) {
		g.nodes++
		if v < g.n {
			if waits != nil {
				for _, q := range waits[v] {
					each(g.n + q)
				}
				return
			}
			for _, p := range g.of[v] {
				for _, ch := range c.children[p] {
					each(g.n + ch)
				}
			}
			return
		}
		p := v - g.n
		for _, j := range c.at[p] {
			if !done[j] {
				each(j)
			}
		}
		if waits == nil {
			for _, ch := range c.children[p] {
				each(g.n + ch)
			}
		}
	}
	// Tarjan's search, iterative: the first component it completes that holds an item reaches
	// no other item's component (every component reachable from it completes before it).
	index, low, onStack := c.index, c.low, c.onStack
	var stack []int
	type frame struct {
		v    int
		next []int
	}
	counter := 0
	visit := func(v int) frame {
		index[v], low[v] = counter, counter
		counter++
		c.visited = append(c.visited, v)
		stack = append(stack, v)
		onStack[v] = true
		var next []int
		succ(v, func(w int) { next = append(next, w) })
		return frame{v, next}
	}
	frames := []frame{visit(start)}
	for len(frames) > 0 {
		f := &frames[len(frames)-1]
		if len(f.next) > 0 {
			w := f.next[0]
			f.next = f.next[1:]
			switch {
			case index[w] < 0:
				frames = append(frames, visit(w))
			case onStack[w]:
				low[f.v] = min(low[f.v], index[w])
			}
			continue
		}
		v := f.v
		frames = frames[:len(frames)-1]
		if len(frames) > 0 {
			u := frames[len(frames)-1].v
			low[u] = min(low[u], low[v])
		}
		if low[v] != index[v] {
			continue
		}
		pick := -1
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			if w < g.n && (pick < 0 || w < pick) {
				pick = w
			}
			if w == v {
				break
			}
		}
		if pick >= 0 {
			return pick
		}
	}
	return start // not reached: start is an item, in a component the search completes
}

// indexHeap is a min-heap of listed indices.
type indexHeap []int

func (h *indexHeap) push(x int) {
	*h = append(*h, x)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if (*h)[p] <= (*h)[i] {
			break
		}
		(*h)[p], (*h)[i] = (*h)[i], (*h)[p]
		i = p
	}
}

func (h *indexHeap) pop() int {
	old := *h
	x := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && (*h)[l] < (*h)[m] {
			m = l
		}
		if l+1 < n && (*h)[l+1] < (*h)[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		(*h)[m], (*h)[i] = (*h)[i], (*h)[m]
		i = m
	}
	return x
}
