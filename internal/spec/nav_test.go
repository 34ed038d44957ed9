package spec

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
)

// TestJSONContextAsHCLs: at every offset of these files, jsonNav names the context as HCL's
// JSON navigation does (keys with escapes and dots, arrays of scalars and objects, nesting, a
// byte order mark, empty containers).
func TestJSONContextAsHCLs(t *testing.T) {
	for _, src := range []string{
		`{"id": "db", "capability": [{"access_mode": "x"}, 1, {"b": [[{"c": {}}]]}], "parameters": {"a.b": {"x": 1}, "k\u00e9\"y": {"z": []}}}`,
		"\ufeff{\n  \"secrets\": {\"a\": \"}\\\"{\"},\n  \"mount_options\": {\"mount_flags\": [\"a\", \"b\"]},\n  \"topology_request\": {\"required\": {\"topology\": [{\"segments\": {\"r\": \"1\"}}]}}\n}\n",
		`{"group": {"web": {"volume": {"data": {"type": "csi"}, "logs": {"type": "csi"}}}}, "x": [], "y": {}}`,
		`{}`, `[]`, `[{"a": {}}, {"b": [1, {"c": 2}]}]`,
	} {
		start := hcl.InitialPos
		body := []byte(src)
		if strings.HasPrefix(src, "\ufeff") {
			body, start.Byte = body[len(utf8BOM):], len(utf8BOM)
		}
		f, diags := hcljson.ParseWithStartPos(body, "f.json", start)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", src, diags)
		}
		theirs := f.Nav.(interface{ ContextString(int) string })
		ours := &jsonNav{src: []byte(src), from: start.Byte}
		for off := 0; off <= len(src); off++ {
			if a, b := ours.ContextString(off), theirs.ContextString(off); a != b {
				t.Errorf("%s\nat %d (%q): %q, HCL says %q", src, off, src[off:min(off+10, len(src))], a, b)
			}
		}
	}
}

// TestJSONContextIsLinear: a one-line JSON spec of 3,276 unknown keys, each in an object
// (so each is looked up among 3,276 members), renders its 3,276 diagnostics looking at a
// few dozen members each, not 3,276: HCL's navigation walked every member of the top
// object for each one (400 million steps for 20,000; seconds, minutes for 1 MiB). The file
// is as large as MaxItems lets it be (each key is 15 items; 20,000 were, before it).
func TestJSONContextIsLinear(t *testing.T) {
	const n = MaxItems / 20
	var b strings.Builder
	b.WriteString(`{"id": "db", "type": "csi", "plugin_id": "p", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]`)
	for i := range n {
		fmt.Fprintf(&b, `, "k%d": {"x": 1}`, i)
	}
	b.WriteString("}")
	p := NewParser()
	_, diags := p.Parse("big.json", []byte(b.String()), VerbAny)
	if len(diags) != n {
		t.Fatalf("%d diagnostics, want %d", len(diags), n)
	}
	if err := p.WriteDiagnostics(io.Discard, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	nav, ok := p.files["big.json"].Nav.(*jsonNav)
	if !ok {
		t.Fatalf("the file's navigation is %T, HCL's, which walks every member for each diagnostic", p.files["big.json"].Nav)
	}
	if limit := 40 * n; nav.steps > limit {
		t.Errorf("%d members looked at for %d diagnostics, want at most %d", nav.steps, n, limit)
	}
}

// TestMapKeysCheckedInLinearTime: a map of 20,000 keys is checked for repeated keys with one
// lookup per key, not by comparing each with every key before it (200 million comparisons:
// seconds for a one-line JSON spec, minutes for one of 1 MiB); a repeat is still found.
func TestMapKeysCheckedInLinearTime(t *testing.T) {
	const n = 20000
	var b strings.Builder
	b.WriteString(`{"parameters": {`)
	for i := range n {
		fmt.Fprintf(&b, `"k%d": "v", `, i)
	}
	b.WriteString(`"k7": "again"}}`)
	f, diags := hcljson.Parse([]byte(b.String()), "big.json")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	d := &decoder{json: true}
	// stringMap, which takes any number of entries (an exec env): a plugin's maps (nomadMap)
	// are refused past the 4097 entries 4 KiB can hold before any key is looked at.
	m := d.stringMap(d.content(f.Body, volumeSchema), "parameters")
	if m == nil || len(m.entries) != n || !strings.Contains(d.diags.Error(), `the key "k7" more than once`) {
		t.Fatalf("%d entries, %v: want %d and the repeated key", len(m.entries), d.diags, n)
	}
	if m.looked > 2*n {
		t.Errorf("%d keys looked at for a map of %d, want at most %d", m.looked, n, 2*n)
	}
}

// TestNativeContextAsHCLs: at every offset, blockNav names the block as hclsyntax's navigation
// does, and through the HCL1 rewrite as the rewritten file's navigation did.
func TestNativeContextAsHCLs(t *testing.T) {
	src := "id = \"db\"\ncapability {\n  access_mode = \"x\"\n}\ngroup \"we\\\"b\" \"x\" {\n  volume \"v\" {\n  }\n}\nk {}\n# c\nsecrets {\n  a = \"}\"\n}\n"
	f, diags := hclsyntax.ParseConfig([]byte(src), "f.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	theirs := f.Nav.(interface{ ContextString(int) string })
	ours := newBlockNav(f.Body)
	for off := 0; off <= len(src); off++ {
		if a, b := ours.ContextString(off), theirs.ContextString(off); a != b {
			t.Errorf("at %d (%q): %q, HCL says %q", off, src[off:min(off+10, len(src))], a, b)
		}
	}
	hcl1 := "\"id\" = \"db\"\ncapability { access_mode = \"x\", attachment_mode = \"y\" }\nk { a = 1 }\n"
	rw, m, ok := rewriteHCL1([]byte(hcl1), "f.hcl")
	if !ok {
		t.Fatal("not rewritten")
	}
	rf, _ := hclsyntax.ParseConfig(rw, "f.hcl", hcl.InitialPos)
	theirs = mappedOld{inner: rf.Nav.(interface{ ContextString(int) string }), m: m}
	mine := mappedNav{inner: newBlockNav(rf.Body), m: m}
	for off := 0; off <= len(hcl1); off++ {
		if a, b := mine.ContextString(off), theirs.ContextString(off); a != b {
			t.Errorf("hcl1 at %d (%q): %q, want %q", off, hcl1[off:min(off+10, len(hcl1))], a, b)
		}
	}
}

// mappedOld is mappedNav as it was: each original offset mapped by trying every segment.
type mappedOld struct {
	inner interface{ ContextString(int) string }
	m     *offsetMap
}

func (n mappedOld) ContextString(offset int) string {
	for _, s := range n.m.segs {
		if !s.inserted && offset >= s.orig && offset < s.orig+s.n {
			return n.inner.ContextString(s.rw + offset - s.orig)
		}
	}
	return n.inner.ContextString(n.m.rwLen)
}

// TestNativeContextIsLinear: 3,276 unknown blocks, in HCL2 and in HCL1's one-line form (which
// the rewrite maps back), render their 3,276 diagnostics looking at a few dozen blocks and
// segments each: hclsyntax's navigation tried every block of the file for each, and the
// rewrite's map every segment (minutes for a file of 1 MiB). The file is as large as
// MaxItems lets it be (20,000 blocks were, before it).
func TestNativeContextIsLinear(t *testing.T) {
	const n = MaxItems / 20
	head := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"p\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	for _, form := range []string{"k%d {\n}\n", "k%d { a = 1 }\n"} {
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			fmt.Fprintf(&b, form, i)
		}
		p := NewParser()
		_, diags := p.Parse("big.hcl", []byte(b.String()), VerbAny)
		if len(diags) != n {
			t.Fatalf("%q: %d diagnostics, want %d", form, len(diags), n)
		}
		if err := p.WriteDiagnostics(io.Discard, diags, 0, false); err != nil {
			t.Fatal(err)
		}
		nav := p.files["big.hcl"].Nav
		if m, ok := nav.(mappedNav); ok {
			if limit := 40 * n; m.m.looked > limit {
				t.Errorf("%q: %d segments looked at for %d diagnostics, want at most %d", form, m.m.looked, n, limit)
			}
			nav = m.inner
		}
		bn, ok := nav.(*blockNav)
		if !ok {
			t.Fatalf("%q: the file's navigation is %T, HCL's, which tries every block for each diagnostic", form, nav)
		}
		if limit := 40 * n; bn.steps > limit {
			t.Errorf("%q: %d blocks looked at for %d diagnostics, want at most %d", form, bn.steps, n, limit)
		}
	}
}
