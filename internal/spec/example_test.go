package spec

import (
	"strings"
	"testing"
)

// TestExamples checks that what `volctl init` writes validates, and is commented.
func TestExamples(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			src, err := Example(kind)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(src), "#") {
				t.Error("the example should open with a comment saying what it is")
			}
			verbs := []Verb{VerbAny}
			if kind == KindVolume {
				verbs = append(verbs, VerbCreate)
			}
			for _, verb := range verbs {
				p := NewParser()
				f, diags := p.Parse(string(kind)+".hcl", src, verb)
				if len(diags) > 0 || f == nil {
					var out strings.Builder
					p.WriteDiagnostics(&out, diags, 0, false)
					t.Fatalf("verb %q:\n%s", verb, out.String())
				}
				if f.Kind != kind {
					t.Errorf("detected as %s", f.Kind)
				}
			}
		})
	}
	if _, err := Example("job"); err == nil {
		t.Error("Example(job) should fail")
	}
}
