package spec

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var update = flag.Bool("update", false, "rewrite the .golden files of fixtures/ from the current output")

// fixturesDir is the repository's fixtures folder, found from this package's directory.
func fixturesDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fixtureVerb reads the verb a fixture is validated for from its name: "create__x.hcl" and
// "register__x.hcl" (see fixtures/README.md); any other name uses no verb.
func fixtureVerb(name string) Verb {
	switch {
	case strings.HasPrefix(name, "create__"):
		return VerbCreate
	case strings.HasPrefix(name, "register__"):
		return VerbRegister
	}
	return VerbAny
}

// specFiles lists the spec files (.hcl, .json) in dir.
func specFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	stems := map[string]string{}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext == ".hcl" || ext == ".json" {
			// foo.hcl and foo.json would share foo.golden.
			stem := strings.TrimSuffix(e.Name(), ext)
			if other, dup := stems[stem]; dup {
				t.Fatalf("%s and %s in %s would share a golden file; rename one", other, e.Name(), dir)
			}
			stems[stem] = e.Name()
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// render parses a fixture and renders its diagnostics as `volctl validate` does off a
// terminal: no colour, no wrapping.
func render(t testing.TB, path string, force bool) (*File, hcl.Diagnostics, string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	p := NewParser()
	p.forceRewrite = force
	f, diags := p.Parse(name, src, fixtureVerb(name))
	var buf bytes.Buffer
	if err := p.WriteDiagnostics(&buf, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	return f, diags, buf.String()
}

func goldenPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
}

// checkGolden compares got with the fixture's golden file, or rewrites it under -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	golden := goldenPath(path)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/spec -update to create it, then review it)", err)
	}
	if got != string(want) {
		t.Errorf("diagnostics differ from %s (go test ./internal/spec -update rewrites it)\n--- got\n%s\n--- want\n%s", filepath.Base(golden), got, want)
	}
}

// TestInvalidFixtures checks every fixtures/invalid spec fails with exactly the diagnostics
// in its golden file.
func TestInvalidFixtures(t *testing.T) {
	files := specFiles(t, filepath.Join(fixturesDir(t), "invalid"))
	if len(files) < 30 {
		t.Fatalf("found %d invalid fixtures, want at least 30", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, diags, out := render(t, path, false)
			if !diags.HasErrors() {
				t.Fatalf("no error for an invalid fixture; diagnostics:\n%s", out)
			}
			if f != nil {
				t.Errorf("Parse returned a File along with errors")
			}
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic %q has no source range", d.Summary)
				}
			}
			checkGolden(t, path, out)
		})
	}
}

// TestValidFixtures checks every fixtures/valid spec parses with no diagnostics, or with
// exactly the warnings in its golden file when it has one.
func TestValidFixtures(t *testing.T) {
	files := specFiles(t, filepath.Join(fixturesDir(t), "valid"))
	kinds := map[Kind]int{}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, diags, out := render(t, path, false)
			if diags.HasErrors() || f == nil {
				t.Fatalf("valid fixture fails:\n%s", out)
			}
			kinds[f.Kind]++
			if _, err := os.Stat(goldenPath(path)); err == nil || *update && len(diags) > 0 {
				checkGolden(t, path, out)
			} else if len(diags) > 0 {
				t.Errorf("unexpected warnings (add a .golden file if they are intended):\n%s", out)
			}
		})
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no valid fixture of kind %s", k)
		}
	}
}

// TestRewriteKeepsDiagnostics runs every fixture that is valid HCL2 through the HCL1 rewrite
// too: the rewrite must not change a single diagnostic or decoded value of such a file.
func TestRewriteKeepsDiagnostics(t *testing.T) {
	dir := fixturesDir(t)
	files := append(specFiles(t, filepath.Join(dir, "valid")), specFiles(t, filepath.Join(dir, "invalid"))...)
	rewritten := 0
	for _, path := range files {
		if filepath.Ext(path) != ".hcl" {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, diags := hclParse(src); diags.HasErrors() {
			continue // not HCL2: always rewritten
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			plainFile, _, plain := render(t, path, false)
			forcedFile, _, forced := render(t, path, true)
			if plain != forced {
				t.Errorf("the rewrite changed the diagnostics\n--- plain\n%s\n--- rewritten\n%s", plain, forced)
			}
			if !reflect.DeepEqual(plainFile, forcedFile) {
				t.Errorf("the rewrite changed the decoded spec")
			}
		})
		if _, _, ok := rewriteHCL1(src, path); ok {
			rewritten++
		}
	}
	if rewritten == 0 {
		t.Fatal("no HCL2 fixture needed any rewriting, so this test proved nothing")
	}
}

func hclParse(src []byte) (*hcl.File, hcl.Diagnostics) {
	return hclsyntax.ParseConfig(src, "test.hcl", hcl.InitialPos)
}
