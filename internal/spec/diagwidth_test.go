package spec

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestDiagnosticCaretsCountCells: the carets sit under the offending text on a terminal, where
// a CJK character takes two cells: counted by runes, they fell short of it by one cell for each
// such character before it, and under a CJK name there were half as many as it takes.
func TestDiagnosticCaretsCountCells(t *testing.T) {
	src := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\ncapability {\n" +
		"  attachment_mode = \"file-system\"\n" +
		"  /* 名前名前 */ access_mode = \"single-node-writter\"\n" +
		"  /* 名前 */ データ = \"x\"\n}\n"
	p := NewParser()
	_, diags := p.ParseVolume("vol.hcl", []byte(src), VerbAny)
	if !diags.HasErrors() {
		t.Fatal("no diagnostics: the test tests nothing")
	}
	var out strings.Builder
	if err := p.WriteDiagnostics(&out, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	marked := map[string]bool{}
	for i, l := range lines[1:] {
		start := strings.Index(l, "^")
		if start < 0 || !strings.ContainsAny(lines[i], "名前") {
			continue
		}
		n := strings.Count(l, "^")
		marked[ansi.Cut(lines[i], start, start+n)] = true
	}
	for _, want := range []string{`"single-node-writter"`, "データ"} {
		if !marked[want] {
			t.Errorf("no carets sit under %q, cell for cell; they mark %q:\n%s", want, slices.Sorted(maps.Keys(marked)), out.String())
		}
	}
}
