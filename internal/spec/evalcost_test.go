package spec

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// allocated is the bytes the heap handed out while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// listOf is an HCL list of n copies of item.
func listOf(n int, item string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func hasError(diags hcl.Diagnostics, summary, detail string) bool {
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Summary == summary && strings.Contains(d.Detail, detail) {
			return true
		}
	}
	return false
}

// TestNestedForExpressionsAreRefusedBeforeEvaluation: a for expression builds its body once
// per element, so three nested over a list of 200 (2 KB of plugin spec) built 8,000,000
// values, and validate ran past a minute; four would take the host's memory. The bound is
// judged on the syntax, before anything is built.
func TestNestedForExpressionsAreRefusedBeforeEvaluation(t *testing.T) {
	l := listOf(60, "1") // 60³ = 216,000 values
	src := fmt.Sprintf("plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/bin/p\"\n"+
		"    args = [for a in %s : [for b in %s : [for c in %s : \"x\"]]]\n  }\n}\n", l, l, l)
	var diags hcl.Diagnostics
	used := allocated(func() { _, diags = NewParser().ParsePlugins("p.hcl", []byte(src)) })
	if !hasError(diags, "Value too large to evaluate", fmt.Sprintf("at most %d", MaxExprValues)) {
		t.Fatalf("no \"Value too large to evaluate\" error naming the limit; got:\n%s", diags.Error())
	}
	if used > 8<<20 {
		t.Errorf("refusing the spec allocated %d MiB: the expression was evaluated", used>>20)
	}
	// Deeper nesting saturates the bound rather than wrap it round to a small number.
	deep := "\"x\""
	for range 20 {
		deep = "[for a in " + listOf(200, "1") + " : " + deep + "]"
	}
	if n := exprValues(mustExpr(t, deep)); n < MaxExprValues {
		t.Errorf("20 nested for expressions over 200 elements: bound %d, under the limit", n)
	}
}

// TestSmallForExpressionsStillEvaluate: the bound leaves a for expression of a plugin spec
// that builds a few values as it was.
func TestSmallForExpressionsStillEvaluate(t *testing.T) {
	src := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/bin/p\"\n" +
		"    args = [for s in [\"serve\", \"--flag\"] : s if s != \"\"]\n  }\n}\n"
	ps, diags := NewParser().ParsePlugins("p.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := strings.Join(ps[0].Exec.Args, " "); got != "serve --flag" {
		t.Errorf("args = %q, want \"serve --flag\"", got)
	}
	for expr, want := range map[string]int64{
		`"x"`:                      2, // a template of one literal
		`[1, 2, 3]`:                4,
		`[for a in [1, 2, 3] : a]`: 2 + 3 + 3, // the for, its list and its 3 elements, the body 3 times
		`[for a in [1, 2] : [for b in [1, 2, 3] : b]]`: 1 + 3 + 2*(1+4) + 2*3, // inner list twice, inner body 6 times
	} {
		if got := exprValues(mustExpr(t, expr)); got != want {
			t.Errorf("exprValues(%s) = %d, want %d", expr, got, want)
		}
	}
}

func mustExpr(t *testing.T, src string) hcl.Expression {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte("x = "+src+"\n"), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	attrs, _ := f.Body.JustAttributes()
	return attrs["x"].Expr
}

// TestTemplateIsRefusedUnevaluated: a template's value is never used (a spec's template is
// refused), yet it was built first: for directives nested three deep over lists of 50 made a
// string of 12 MB, a level more 600 MB, before "Interpolation not allowed".
func TestTemplateIsRefusedUnevaluated(t *testing.T) {
	l := listOf(50, "1")
	x := strings.Repeat("x", 100)
	src := baseVolume + fmt.Sprintf("parameters {\n  p = \"%%{for a in %s}%%{for b in %s}%%{for c in %s}%s%%{endfor}%%{endfor}%%{endfor}\"\n}\n", l, l, l, x)
	var diags hcl.Diagnostics
	used := allocated(func() { _, diags = ParseVolume("v.hcl", []byte(src), VerbRegister) })
	if !hasError(diags, "Interpolation not allowed", "does not evaluate a template") {
		t.Fatalf("no \"Interpolation not allowed\" error; got:\n%s", diags.Error())
	}
	if used > 4<<20 {
		t.Errorf("refusing the template allocated %d MiB: it was evaluated", used>>20)
	}
}

// TestNumberStringsAsCtyMakesThem: toString writes a whole number without cty's conversion
// (big.Float's shortest decimal, 40 µs a number: 340,000 of them in mount_flags took 13 s),
// and every number as cty's conversion does.
func TestNumberStringsAsCtyMakesThem(t *testing.T) {
	for _, src := range []string{"0", "1", "-1", "007", "1e3", "1.5", "0.1", "-0", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "123456789012345678901234567890", "1e400", "3.14159265358979323846264338327950288"} {
		v := mustExpr(t, src)
		n, diags := v.Value(nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		want, err := convert.Convert(n, cty.String)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := toString(n); !ok || got != want.AsString() {
			t.Errorf("toString(%s) = %q, %v; cty makes %q", src, got, ok, want.AsString())
		}
	}
}

// TestLongListsAndMapsAreCountedBeforeEvaluation: mount flags and a plugin's maps are held to
// 4 KiB, but their values were all evaluated and made strings before the sum was checked, and
// HCL's numbers are slow to make strings of: 340,000 numbers in mount_flags (a file of 680 KB)
// took 13 s and 460 MB. Past the most entries 4 KiB can hold, they are refused uncounted.
func TestLongListsAndMapsAreCountedBeforeEvaluation(t *testing.T) {
	var entries strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&entries, "  k%d = %d\n", i, i)
	}
	block := entries.String()
	// A context is held to the 16 KiB volctl takes from a plugin (MaxPluginMap), whose
	// 16,385 entries are past what MaxItems lets a file hold: it is refused by its size.
	var contextEntries strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&contextEntries, "  k%d = \"%04d\"\n", i, i)
	}
	for _, c := range []struct{ name, src, detail string }{
		{"mount_flags", baseVolume + "mount_options {\n  mount_flags = " + listOf(10000, "1") + "\n}\n", fmt.Sprintf("mount_flags holds 10000 flags; the CSI spec limits them to %d bytes", MaxCSIMountOpts)},
		{"parameters block", baseVolume + "parameters {\n" + block + "}\n", fmt.Sprintf("parameters has 5000 entries; the CSI spec limits a map to %d bytes", MaxCSIMap)},
		{"context attribute", baseVolume + "context = {\n" + contextEntries.String() + "}\n", fmt.Sprintf("bytes of keys and values; volctl takes a volume's context of up to %d bytes", MaxPluginMap)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var diags hcl.Diagnostics
			used := allocated(func() { _, diags = ParseVolume("v.hcl", []byte(c.src), VerbRegister) })
			if !hasError(diags, "Value too long", c.detail) && !hasError(diags, "Map too large", c.detail) {
				t.Fatalf("no error saying %q; got:\n%s", c.detail, diags.Error())
			}
			t.Logf("%d KiB of spec, %d MiB allocated", len(c.src)>>10, used>>20)
		})
	}
}
