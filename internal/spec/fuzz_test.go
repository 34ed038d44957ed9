package spec

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

var fuzzVerbs = []Verb{VerbAny, VerbCreate, VerbRegister}

// checkParseResult holds what every parse a fuzz target makes must keep: its diagnostics can be
// written, a result comes back exactly when there is no error, and every diagnostic's range
// lies within the source.
func checkParseResult(t *testing.T, p *Parser, src []byte, diags hcl.Diagnostics, parsed bool) {
	t.Helper()
	if err := p.WriteDiagnostics(io.Discard, diags, 80, false); err != nil {
		t.Fatal(err)
	}
	if parsed == diags.HasErrors() {
		t.Fatalf("a result returned (%v) with errors=%v", parsed, diags.HasErrors())
	}
	checkDiagnosticRanges(t, src, diags)
}

// FuzzParseVolume feeds the volume parser arbitrary bytes. It must never panic; what it
// accepts must be a sound volume; its diagnostics must point inside the file, with line and
// column agreeing with the byte offset; the nesting check must see HCL's tokens nest at least
// as deep as they do, and the item count count at least as many; and parsing the same input again must give the same result.
func FuzzParseVolume(f *testing.F) {
	seeds := map[string]Verb{}
	for _, dir := range []string{filepath.Join("..", "..", "fixtures", "valid"), filepath.Join("..", "..", "fixtures", "invalid")} {
		for _, path := range specFiles(f, dir) {
			seeds[path] = fixtureVerb(filepath.Base(path))
		}
	}
	corpus := nomadCorpus(f)
	for _, e := range readSources(f, corpus) {
		seeds[filepath.Join(corpus, e.file)] = e.verb
	}
	for path, verb := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src, uint8(indexOf(fuzzVerbs, verb)))
	}
	for _, kind := range Kinds {
		src, _ := Example(kind)
		f.Add(src, uint8(0))
	}

	f.Fuzz(func(t *testing.T, src []byte, verbIndex uint8) {
		verb := fuzzVerbs[int(verbIndex)%len(fuzzVerbs)]
		p := NewParser()
		v, diags := p.ParseVolume("fuzz.hcl", src, verb)
		checkParseResult(t, p, src, diags, v != nil)
		if !isJSON("fuzz.hcl", src) {
			checkNestingScan(t, src)
			checkItemsCountTokens(t, src)
		}
		if v != nil {
			checkSoundVolume(t, v)
		}

		v2, diags2 := NewParser().ParseVolume("fuzz.hcl", src, verb)
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("second parse differs:\n%+v\n%+v", v, v2)
		}
		if a, b := renderPlain(p, diags), renderPlain(p, diags2); a != b {
			t.Fatalf("second parse reports differently:\n%s\n---\n%s", a, b)
		}
	})
}

func indexOf(verbs []Verb, v Verb) int {
	for i, x := range verbs {
		if x == v {
			return i
		}
	}
	return 0
}

func renderPlain(p *Parser, diags hcl.Diagnostics) string {
	var b strings.Builder
	p.WriteDiagnostics(&b, diags, 0, false)
	return b.String()
}

func checkDiagnosticRanges(t *testing.T, src []byte, diags hcl.Diagnostics) {
	t.Helper()
	m := &offsetMap{src: src, lineStarts: lineStarts(src)}
	for _, d := range diags {
		for _, r := range []*hcl.Range{d.Subject, d.Context} {
			if r == nil {
				continue
			}
			if r.Start.Byte < 0 || r.Start.Byte > r.End.Byte || r.End.Byte > len(src) {
				t.Fatalf("%q: range %v outside the %d-byte file", d.Summary, r, len(src))
			}
			for _, pos := range []hcl.Pos{r.Start, r.End} {
				want := m.pos(pos.Byte)
				// HCL counts columns in grapheme clusters token by token, so around combining
				// marks its columns and a whole-line count can differ; on ASCII lines they agree.
				lineStart := m.lineStarts[want.Line-1]
				if want.Line != pos.Line || isASCII(src[lineStart:pos.Byte]) && want.Column != pos.Column {
					t.Fatalf("%q: position %d:%d for byte %d, want %d:%d", d.Summary, pos.Line, pos.Column, pos.Byte, want.Line, want.Column)
				}
			}
		}
	}
}

func checkSoundVolume(t *testing.T, v *Volume) {
	t.Helper()
	if v.Type != "csi" || len(v.Capabilities) == 0 {
		t.Fatalf("accepted a volume without type csi or capabilities: %+v", v)
	}
	for _, c := range v.Capabilities {
		if !c.AccessMode.Valid() || !c.AttachmentMode.Valid() {
			t.Fatalf("accepted capability %+v", c)
		}
	}
	if err := ValidateID("id", v.ID); err != nil {
		t.Fatalf("accepted %v", err)
	}
	if err := ValidateID("plugin", v.PluginID); err != nil {
		t.Fatalf("accepted %v", err)
	}
	if v.CapacityMin < 0 || v.CapacityMax < 0 || v.CapacityMin > 0 && v.CapacityMax > 0 && v.CapacityMin > v.CapacityMax {
		t.Fatalf("accepted capacity %d..%d", v.CapacityMin, v.CapacityMax)
	}
	for k := range v.Secrets {
		if !validSecretKey(k) {
			t.Fatalf("accepted secret key %q", k)
		}
	}
}

// BenchmarkParseVolumeTemplate parses and validates Nomad's `nomad volume init` template,
// which uses HCL1 syntax and so goes through the rewrite.
func BenchmarkParseVolumeTemplate(b *testing.B) {
	benchmarkParse(b, filepath.Join(nomadCorpus(b), "command__asset__volume.csi.hcl"))
}

// BenchmarkParseVolumePlain parses a spec that is plain HCL2 (no rewrite).
func BenchmarkParseVolumePlain(b *testing.B) {
	benchmarkParse(b, filepath.Join(nomadCorpus(b), "demo__csi__hostpath__hostpath.hcl"))
}

func benchmarkParse(b *testing.B, path string) {
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if v, diags := ParseVolume("volume.hcl", src, VerbAny); v == nil {
			b.Fatal(diags)
		}
	}
}
