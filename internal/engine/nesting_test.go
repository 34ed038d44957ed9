package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// nestedLayouts are the reviewer's nested groups of n allocs, in the listed order that cost the
// most: home[i] at dir/i with a shared tools at dir/i/tools (tools listed last), and a shared
// conf at /srv/app/i with data[i] below it (data listed first).
func nestedLayouts(n int) map[string][]store.Claim {
	claim := func(vol, dest string) store.Claim {
		return store.Claim{VolumeID: vol, Binds: []spec.VolumeMount{{Destination: dest}}}
	}
	var tools, conf []store.Claim
	for i := range n {
		tools = append(tools, claim(fmt.Sprintf("home[%d]", i), fmt.Sprintf("/srv/dir/%d", i)))
		conf = append(conf, claim(fmt.Sprintf("data[%d]", i), fmt.Sprintf("/srv/app/%d/data", i)))
	}
	for i := range n {
		tools = append(tools, claim("tools", fmt.Sprintf("/srv/dir/%d/tools", i)))
		conf = append(conf, claim("conf", fmt.Sprintf("/srv/app/%d", i)))
	}
	return map[string][]store.Claim{"tools": tools, "conf": conf}
}

// claimAt is a claim of vol with volume_mounts at dests.
func claimAt(vol string, dests ...string) store.Claim {
	cl := store.Claim{VolumeID: vol}
	for _, d := range dests {
		cl.Binds = append(cl.Binds, spec.VolumeMount{Destination: d})
	}
	return cl
}

// nestingOrder reads each item's destinations once, not once per pair per pick: a group of 1,000
// allocs with nested volume_mounts took 23 s to order (n³), on every reconcile pass, group stop
// and claim GC; and its steps grow linearly with the claims. Counted, not timed. Both ways, the
// order is right.
func TestNestingOrderReadsEachItemOnce(t *testing.T) {
	for name, claims := range nestedLayouts(500) {
		for _, outerFirst := range []bool{true, false} {
			reads := 0
			got := nestingOrder(claims, func(c store.Claim) []string { reads++; return bindDests(c.Binds) }, outerFirst)
			if reads > 2*len(claims) {
				t.Fatalf("%s (outerFirst %v): nestingOrder read destinations %d times for %d claims, want at most %d (it compares every pair per pick)",
					name, outerFirst, reads, len(claims), 2*len(claims))
			}
			checkNested(t, name, got, outerFirst)
			g := newNestGraph(len(claims), func(i int) []string { return bindDests(claims[i].Binds) })
			g.sort(outerFirst)
			if g.nodes > 10*len(claims) {
				t.Fatalf("%s (outerFirst %v): ordering %d claims took %d steps, want at most %d", name, outerFirst, len(claims), g.nodes, 10*len(claims))
			}
		}
	}
}

// checkNested fails t unless no claim of order comes before one it must follow.
func checkNested(t *testing.T, name string, order []store.Claim, outerFirst bool) {
	t.Helper()
	for a := range order {
		for b := a + 1; b < len(order); b++ {
			for _, da := range bindDests(order[a].Binds) {
				for _, db := range bindDests(order[b].Binds) {
					if outerFirst && under(da, db) || !outerFirst && under(db, da) {
						t.Fatalf("%s (outerFirst %v): %s (%s) comes before %s (%s)", name, outerFirst, order[a].VolumeID, da, order[b].VolumeID, db)
					}
				}
			}
		}
	}
}

// referenceNestingOrder is the order by definition: repeatedly the first item in the listed
// order that waits on no item left (cubic; for comparison on small inputs only).
func referenceNestingOrder(items []store.Claim, outerFirst bool) []store.Claim {
	rest := slices.Clone(items)
	var out []store.Claim
	waits := func(i, j store.Claim) bool {
		for _, a := range bindDests(i.Binds) {
			for _, b := range bindDests(j.Binds) {
				if outerFirst && under(a, b) || !outerFirst && under(b, a) {
					return true
				}
			}
		}
		return false
	}
	for len(rest) > 0 {
		pick := 0
	find:
		for i := range rest {
			for j := range rest {
				if i != j && waits(rest[i], rest[j]) {
					continue find
				}
			}
			pick = i
			break
		}
		out = append(out, rest[pick])
		rest = slices.Delete(rest, pick, pick+1)
	}
	return out
}

// On random groups whose destinations nest without a cycle (each claim one destination, some
// shared), nestingOrder is the order by definition, both ways.
func TestNestingOrderIsTheDefinedOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(28))
	paths := []string{"/a", "/a/b", "/a/b/c", "/a/bc", "/a/b/c/d", "/x", "/x/y", "/a-b", "/a-b/c", "/"}
	for round := range 500 {
		n := 1 + rng.Intn(9)
		var claims []store.Claim
		for i := range n {
			c := store.Claim{VolumeID: fmt.Sprint(i)}
			if rng.Intn(5) > 0 {
				c.Binds = []spec.VolumeMount{{Destination: paths[rng.Intn(len(paths))]}}
			}
			claims = append(claims, c)
		}
		for _, outerFirst := range []bool{true, false} {
			got := nestingOrder(claims, func(c store.Claim) []string { return bindDests(c.Binds) }, outerFirst)
			want := referenceNestingOrder(claims, outerFirst)
			if !slices.EqualFunc(got, want, func(a, b store.Claim) bool { return a.VolumeID == b.VolumeID }) {
				t.Fatalf("round %d (outerFirst %v): nestingOrder of %v = %v, want %v", round, outerFirst, claims, got, want)
			}
		}
	}
}

// A claim with two nested destinations of its own (one volume at /t and /t/logs) waits on no one
// for them; a cycle between two claims keeps the listed order.
func TestNestingOrderSelfNestedAndCycles(t *testing.T) {
	c := claimAt
	ids := func(cs []store.Claim) (out []string) {
		for _, c := range cs {
			out = append(out, c.VolumeID)
		}
		return out
	}
	for _, tc := range []struct {
		claims       []store.Claim
		outer, inner []string
	}{
		{[]store.Claim{c("t", "/t", "/t/logs"), c("u", "/u")}, []string{"t", "u"}, []string{"t", "u"}},
		{[]store.Claim{c("deep", "/t/logs/x"), c("t", "/t/logs", "/t")}, []string{"t", "deep"}, []string{"deep", "t"}},
		{[]store.Claim{c("x", "/a", "/b/c"), c("y", "/b", "/a/c")}, []string{"x", "y"}, []string{"x", "y"}},
		{[]store.Claim{c("in", "/a/b"), c("o1", "/a"), c("o2", "/a")}, []string{"o1", "o2", "in"}, []string{"in", "o1", "o2"}},
	} {
		for _, outerFirst := range []bool{true, false} {
			want := tc.inner
			if outerFirst {
				want = tc.outer
			}
			if got := ids(nestingOrder(tc.claims, func(c store.Claim) []string { return bindDests(c.Binds) }, outerFirst)); !slices.Equal(got, want) {
				t.Errorf("nestingOrder(%v, outerFirst %v) = %v, want %v", ids(tc.claims), outerFirst, got, want)
			}
		}
	}
}
