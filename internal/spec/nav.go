package spec

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// jsonNav answers the "in parameters" lookup a diagnostic's snippet makes (hcled.ContextString)
// for a JSON file, as HCL's JSON navigation answers it: the keys and indexes of the objects and
// arrays that hold the offset ("capability[0]"). HCL's walks every member of each object on
// the way, for each diagnostic, so a one-line spec of tens of thousands of keys, each one
// unknown, took seconds to minutes to render; this one indexes the file once, in one pass,
// and finds each offset by binary search among the members of each level
// (TestJSONContextIsLinear; TestJSONContextAsHCLs holds it to HCL's answers).
type jsonNav struct {
	src  []byte
	from int // where the JSON starts: past a byte order mark

	once  sync.Once
	root  *jsonNode
	steps int // members looked at, for tests
}

// jsonNode is an object or array value: where it is, and the step that names it in its parent
// (".key" in an object, "[i]" in an array).
type jsonNode struct {
	start, end int // from its opening bracket to past its closing one
	step       string
	kids       []*jsonNode // the object and array values it holds, in order
}

// ContextString implements what hcled.ContextString looks for.
func (n *jsonNav) ContextString(offset int) string {
	n.once.Do(n.index)
	if n.root == nil {
		return ""
	}
	var b strings.Builder
	for node := n.root; ; {
		kids := node.kids
		i := sort.Search(len(kids), func(i int) bool {
			n.steps++
			return kids[i].end > offset
		})
		if i == len(kids) || kids[i].start > offset {
			break
		}
		node = kids[i]
		b.WriteString(node.step)
	}
	return strings.TrimPrefix(b.String(), ".")
}

// index reads the file's objects and arrays in one pass. It needs no valid JSON: for a file
// HCL's parser refused, what it finds only names a snippet's context.
func (n *jsonNav) index() {
	type frame struct {
		node    *jsonNode
		object  bool
		wantKey bool   // in an object, before a member's key
		key     string // the last key read
		index   int    // in an array, the element's index
	}
	var stack []*frame
	src := n.src
	for i := n.from; i < len(src); i++ {
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch c := src[i]; c {
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if top != nil && top.object && top.wantKey {
				top.key, top.wantKey = jsonKey(src[i:min(j+1, len(src))]), false
			}
			i = j
		case '{', '[':
			node := &jsonNode{start: i, end: len(src)}
			switch {
			case top == nil && n.root != nil:
				continue // a second value after the first: HCL's parser refused the file
			case top == nil:
				n.root = node
			case top.object:
				node.step = "." + top.key
				top.node.kids = append(top.node.kids, node)
			default:
				node.step = "[" + strconv.Itoa(top.index) + "]"
				top.node.kids = append(top.node.kids, node)
			}
			stack = append(stack, &frame{node: node, object: c == '{', wantKey: c == '{'})
		case '}', ']':
			if top != nil {
				top.node.end = i + 1
				stack = stack[:len(stack)-1]
			}
		case ',':
			if top != nil {
				top.wantKey = top.object
				top.index++
			}
		}
	}
}

// jsonKey is a quoted key as HCL's JSON parser reads it (json.Unmarshal), or its bytes when
// that fails.
func jsonKey(q []byte) string {
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return strings.Trim(string(q), `"`)
	}
	return s
}

// blockNav answers the same lookup for a native-syntax file as hclsyntax's navigation does (the
// top-level block holding the offset: `capability`, `group "web"`), which tries each of the
// file's blocks in turn for each diagnostic: 40,000 unknown blocks took a minute and a half. The
// blocks are in source order, apart: one is found by halves (TestNativeContextIsLinear).
type blockNav struct {
	blocks hclsyntax.Blocks
	steps  int // blocks looked at, for tests
}

func newBlockNav(body hcl.Body) *blockNav {
	if b, ok := body.(*hclsyntax.Body); ok {
		return &blockNav{blocks: b.Blocks}
	}
	return &blockNav{}
}

// ContextString implements what hcled.ContextString looks for.
func (n *blockNav) ContextString(offset int) string {
	blocks := n.blocks
	i := sort.Search(len(blocks), func(i int) bool {
		n.steps++
		return blocks[i].Range().End.Byte > offset
	})
	if i == len(blocks) || !blocks[i].Range().ContainsOffset(offset) {
		return ""
	}
	b := blocks[i]
	var s strings.Builder
	s.WriteString(b.Type)
	// A block whose name says it holds secrets (`secrets "hunter2" {`, refused for its label)
	// has its labels masked in the snippet, as every string of its value: named here, they
	// printed the secret on the line above it (secrets37).
	hide := sensitiveName(b.Type)
	for _, l := range b.Labels {
		if hide {
			l = Redacted
		}
		s.WriteString(" " + strconv.Quote(l))
	}
	return s.String()
}
