package spec

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
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

// TestJSONContextIsLinear: a one-line JSON spec of 20,000 unknown keys, each in an object
// (so each is looked up among 20,000 members), renders its 20,000 diagnostics looking at a
// few dozen members each, not 20,000: HCL's navigation walked every member of the top
// object for each one (400 million steps; seconds, minutes for 1 MiB).
func TestJSONContextIsLinear(t *testing.T) {
	const n = 20000
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
	nav, ok := p.Files()["big.json"].Nav.(*jsonNav)
	if !ok {
		t.Fatalf("the file's navigation is %T, HCL's, which walks every member for each diagnostic", p.Files()["big.json"].Nav)
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
	m := d.nomadMap(d.content(f.Body, volumeSchema), "parameters")
	if m == nil || len(m.entries) != n || !strings.Contains(d.diags.Error(), `the key "k7" more than once`) {
		t.Fatalf("%d entries, %v: want %d and the repeated key", len(m.entries), d.diags, n)
	}
	if m.looked > 2*n {
		t.Errorf("%d keys looked at for a map of %d, want at most %d", m.looked, n, 2*n)
	}
}
