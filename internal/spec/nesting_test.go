package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// deepSpecs are hostile files, each nesting (or chaining operators) n levels, of every kind
// HCL's parsers recurse on. For each: the file name, the source, the summary checkNesting
// gives, and the line and column where the limit is passed.
func deepSpecs(n int) []struct {
	name, file, src, summary string
	line, col                int
} {
	r := strings.Repeat
	head := "id = \"a\"\n"
	return []struct {
		name, file, src, summary string
		line, col                int
	}{
		{"parentheses", "v.hcl", head + "capacity_min = " + r("(", n) + "1" + r(")", n) + "\n", "Nesting too deep", 2, 16 + MaxNesting},
		{"brackets", "v.hcl", head + "parameters = {a = " + r("[", n) + r("]", n) + "}\n", "Nesting too deep", 2, 19 + MaxNesting - 1},
		{"objects", "v.hcl", head + "parameters = " + r("{a = ", n) + "1" + r("}", n) + "\n", "Nesting too deep", 2, 14 + 5*MaxNesting},
		{"blocks", "v.hcl", head + r("a {\n", n) + r("}\n", n), "Nesting too deep", 2 + MaxNesting, 3},
		{"one-line blocks", "v.hcl", head + r("a { ", n) + r("} ", n) + "\n", "Nesting too deep", 2, 3 + 4*MaxNesting},
		{"template sequences", "v.hcl", head + "name = " + r(`"${`, n) + r(`}"`, n) + "\n", "Nesting too deep", 2, 8 + 3*(MaxNesting/2)},
		{"template directives", "v.hcl", head + "name = \"" + r("%{if true}", n) + r("%{endif}", n) + "\"\n", "Nesting too deep", 2, 9 + 10*(MaxNesting-2)},
		{"heredocs", "v.hcl", head + "name = " + r("<<EOT\n${", n) + r("}\nEOT\n", n), "Nesting too deep", 2 + MaxNesting/2, 3},
		{"json objects", "v.json", r(`{"a":`, n) + "1" + r("}", n), "Nesting too deep", 1, 1 + 5*MaxNesting},
		{"json arrays", "v.json", `{"a":` + r("[", n) + r("]", n) + "}", "Nesting too deep", 1, 6 + MaxNesting - 1},
		{"unary operators", "v.hcl", head + "capacity_min = " + r("-", n) + "1\n", "Expression too long", 2, 16 + MaxOperators},
		{"negations", "v.hcl", head + "capacity_min = " + r("!", n) + "true\n", "Expression too long", 2, 16 + MaxOperators},
		{"binary operators", "v.hcl", head + "capacity_min = 1" + r("+1", n) + "\n", "Expression too long", 2, 17 + 2*MaxOperators},
		{"conditionals", "v.hcl", head + "capacity_min = " + r("true ? 1 : ", n) + "1\n", "Expression too long", 2, 16 + 11*MaxOperators + 5},
		{"splats", "v.hcl", head + "capacity_min = a" + r("[*]", n) + "\n", "Expression too long", 2, 17 + 3*MaxOperators},
		{"operators over lines in parentheses", "v.hcl", head + "capacity_min = (1" + r("\n+ 1", n) + ")\n", "Expression too long", 2 + MaxOperators + 1, 1},
	}
}

// TestNestingLimit: a file nesting 100,000 levels deep, of each kind, is refused with one
// diagnostic at the level past the limit, before HCL's parser sees it. Without the check, each
// of these costs the parser a gigabyte or more and most end in "fatal error: stack overflow",
// which kills this test binary.
func TestNestingLimit(t *testing.T) {
	for _, c := range deepSpecs(100_000) {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser()
			v, diags := p.ParseVolume(c.file, []byte(c.src), VerbAny)
			if v != nil || len(diags) != 1 {
				t.Fatalf("got volume %v and %d diagnostics, want one error:\n%s", v, len(diags), renderPlain(p, diags))
			}
			d := diags[0]
			if d.Severity != hcl.DiagError || d.Summary != c.summary || d.Subject == nil {
				t.Fatalf("got %s: %s (%v), want an error %q with a subject", d.Summary, d.Detail, d.Subject, c.summary)
			}
			if s := d.Subject; s.Filename != c.file || s.Start.Line != c.line || s.Start.Column != c.col {
				t.Errorf("diagnostic at %s:%d:%d, want %s:%d:%d", s.Filename, s.Start.Line, s.Start.Column, c.file, c.line, c.col)
			}
			out := renderPlain(p, diags)
			if want := fmt.Sprintf("on %s:%d:%d", c.file, c.line, c.col); !strings.Contains(out, want) {
				t.Errorf("rendered diagnostic lacks %q:\n%.400s", want, out)
			}
		})
	}
}

// TestNestingAtLimit: exactly the limit passes the check (and reaches the parser), one more
// level does not.
func TestNestingAtLimit(t *testing.T) {
	at := []string{
		strings.Repeat("(", MaxNesting) + strings.Repeat(")", MaxNesting),
		"a = " + strings.Repeat("-", MaxOperators) + "1",
	}
	over := []string{
		strings.Repeat("(", MaxNesting+1) + strings.Repeat(")", MaxNesting+1),
		"a = " + strings.Repeat("-", MaxOperators+1) + "1",
	}
	for _, src := range at {
		if d := checkNesting("x.hcl", []byte(src), false); d != nil {
			t.Errorf("%.20s...: %v", src, d)
		}
	}
	for _, src := range over {
		if d := checkNesting("x.hcl", []byte(src), false); !d.HasErrors() {
			t.Errorf("%.20s...: passed", src)
		}
	}
}

// TestNestingRealisticSpec: brackets, operators and directive words inside strings, heredocs
// and comments are not counted, nor are separate items' operators added up; a spec nested as
// deep as real ones go (and some more) parses.
func TestNestingRealisticSpec(t *testing.T) {
	many := strings.Repeat("(([[{{", 40)
	var negatives string
	for i := range 2 * MaxOperators {
		negatives += fmt.Sprintf("  n%d = -1\n", i)
	}
	src := `# A volume. ` + many + `
id        = "db"
name      = "db ` + many[:80] + ` $${x} %%{if}"
type      = "csi"
plugin_id = "hostpath"
/* ` + many + ` */
// ` + many + `
capacity_min = 2147483648 # not 2 * 1024 * 1024 * 1024: Nomad's HCL1 has no operators (hcl1expr.go)
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
parameters = {
  note = <<EOT
  ` + many + ` %%{ if } $${ x }
  EOT
  list = "` + strings.Repeat(`[\"`, 100) + `"
` + negatives + `}
topology_request {
  required {
    topology {
      segments = { rack = "r1" }
    }
  }
}
`
	p := NewParser()
	v, diags := p.ParseVolume("v.hcl", []byte(src), VerbAny)
	for _, d := range diags {
		if d.Summary == "Nesting too deep" || d.Summary == "Expression too long" {
			t.Fatalf("refused: %s", renderPlain(p, diags))
		}
	}
	if v == nil {
		t.Fatalf("not parsed: %s", renderPlain(p, diags))
	}
	s := scanNesting([]byte(src), false, 1<<30, 1<<30)
	if s.maxDepth > 6 || s.maxOps > 3 {
		t.Errorf("depth %d and operators %d, want at most 6 and 3", s.maxDepth, s.maxOps)
	}
}

// checkNestingScan holds checkNesting's byte scan of src to the same rules applied to
// hclsyntax's own tokens: it may count more levels or operators (an operator in a name with a
// dash, say), never fewer, or some code hid from it in what it took for a string or comment.
// A file the byte scan leaves to the tokens (a non-ASCII byte in code) is checked over them.
func checkNestingScan(t *testing.T, src []byte) {
	t.Helper()
	b := newNestScan(src, 1<<30, 1<<30)
	b.native()
	if b.nonASCII {
		return
	}
	tk := newNestScan(src, 1<<30, 1<<30)
	tk.tokens(newSource("", src, false).tokens())
	if b.maxDepth < tk.maxDepth || b.maxOps < tk.maxOps {
		t.Fatalf("checkNesting saw %d levels and %d operators in %q; HCL's tokens give %d and %d",
			b.maxDepth, b.maxOps, src, tk.maxDepth, tk.maxOps)
	}
}

// TestNestingScanFollowsHCL: the scan enters and leaves strings, heredocs, comments and
// template sequences where HCL's scanner does, so nothing the parser reads as code is
// skipped. The fuzz target checks the same on every input.
func TestNestingScanFollowsHCL(t *testing.T) {
	for _, src := range []string{
		`a = "${ { ( } }" ((((`,
		`a = "\" ((( "`,
		`a = "\\" ((( "`,
		`a = "$${ ((( }" (((`,
		`a = "$$${ ((( }" (((`,
		`a = "%%{ ((( }"`,
		"a = \"x\n((( \" (((",
		"a = <<EOT\n(((\n  EOT  \n(((",
		"a = <<-EOT\r\n(((\r\nEOT\r\n(((",
		"a = <<EOT\n${x}EOT\n(((\nEOT\n(((",
		"a = <<EOT\n${<<EOF\n(((\nEOF\n}\nEOT\n(((",
		"a = <<É\n(((\nÉ\n(((",
		"a = << EOT\n(((",
		"# (((\n(((",
		"// (((\n(((",
		"/* ((( */ (((",
		"/* ((( ",
		"a = [for x in y : x] (((",
		"a = \"${\"${\"((\"}\"}\" (((",
		"a = \"%{ if x }(%{ endif }\" (((",
		"a = \"x ~} (( \" (((",
		"a = \"${ x ~} ((\" (((",
		"a { b = {c = (}} (((",
		"a = \"\\\n(((\" (((",
		"a = 1e-5 - \"\\u00e9((\" (((",
		"a = \"${ { ~} (( }\" (((",
		"a = -1 # \n -1 /* \n */ -1\n",
		"a = {for k, v in x : k => -v\n-1}",
		"a = [ /* c */ * ] [\n*\n] .*",
	} {
		checkNestingScan(t, []byte(src))
	}
}

// TestNestingNonASCIICode: where a non-ASCII byte stands in code, HCL's scanner reads an
// identifier that may take in the next bytes whatever they are (here the quote after the
// malformed lead byte \xeb), so checkNesting goes by hclsyntax's tokens: the parentheses after
// the quote are code, and counted.
func TestNestingNonASCIICode(t *testing.T) {
	deep := strings.Repeat("(", MaxNesting+1)
	for _, src := range []string{
		"a = \xeb\"0" + deep,
		"a = données + " + deep,
		"a = <<É\n((\nÉ\n" + deep,
	} {
		if d := checkNesting("x.hcl", []byte(src), false); !d.HasErrors() {
			t.Errorf("%q: passed", src)
		}
	}
	if d := checkNesting("x.hcl", []byte("données = \"é ${x} "+deep+"\"\n"), false); d != nil {
		t.Errorf("non-ASCII name and string: %v", d)
	}
}

// TestCheckNestingJSON: JSON strings hide brackets as hcl/json's scanner reads them.
func TestCheckNestingJSON(t *testing.T) {
	deep := strings.Repeat("[", MaxNesting+1)
	for src, refused := range map[string]bool{
		`{"a": "` + deep + `"}`:                false,
		`{"a": "\"` + deep + `"}`:              false,
		`{"a": "\\"` + deep + `"}`:             true,
		"{\"a\": \"\n" + deep:                  true,  // a control character ends a JSON string
		`{"a": "` + "\u0600" + `"` + deep:      false, // a prepended mark takes the quote into its character
		`{"a": [` + deep[:MaxNesting-2] + `]}`: false,
	} {
		if got := checkNesting("x.json", []byte(src), true).HasErrors(); got != refused {
			t.Errorf("%.40q: refused=%v, want %v", src, got, refused)
		}
	}
}

// TestTemplatePartsLimit: a string or heredoc HCL's scanner cuts into very many pieces (at each
// $ and %, and each heredoc line) is refused with one error at the piece past the limit, before
// HCL's parser joins the pieces in time growing with the square of their number (a heredoc of
// 300,000 lines took 9 minutes to parse); in a file the byte scan leaves to HCL's tokens too
// (non-ASCII code), and in any spec kind. At the limit, the check passes.
func TestTemplatePartsLimit(t *testing.T) {
	r := strings.Repeat
	const n = 100_000
	head := "id = \"a\"\n"
	for _, c := range []struct {
		name, src string
		line, col int
	}{
		{"heredoc lines", head + "name = <<EOT\n" + r("l\n", n) + "EOT\n", 3 + MaxTemplateParts, 2},
		{"indented heredoc lines", head + "name = <<-EOT\n" + r("  l\n", n) + "  EOT\n", 3 + MaxTemplateParts, 4},
		{"dollar signs", head + "name = \"" + r("$ ", n) + "\"\n", 2, 9 + MaxTemplateParts},
		{"percent signs", head + "name = \"" + r("%", n) + "\"\n", 2, 9 + MaxTemplateParts/2},
		{"escaped template sequences", head + "name = \"" + r("$${", n) + "\"\n", 2, 9 + 3*MaxTemplateParts/2},
		{"heredoc lines, non-ASCII code", "é = 1\n" + "name = <<EOT\n" + r("l\n", n) + "EOT\n", 3 + MaxTemplateParts, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser()
			_, diags := p.Parse("v.hcl", []byte(c.src), VerbAny)
			if len(diags) != 1 || diags[0].Summary != "String too long" {
				t.Fatalf("want one error %q, got:\n%.2000s", "String too long", renderPlain(p, diags))
			}
			if s := diags[0].Subject; s.Start.Line != c.line || (!strings.Contains(c.name, "non-ASCII") && s.Start.Column != c.col) {
				t.Errorf("at %d:%d, want %d:%d", s.Start.Line, s.Start.Column, c.line, c.col)
			}
		})
	}
	at := head + "name = <<EOT\n" + r("l\n", MaxTemplateParts) + "EOT\n" + "note = \"" + r("$ ", MaxTemplateParts/2) + "\"\n"
	if d := checkNesting("v.hcl", []byte(at), false); d != nil {
		t.Errorf("at the limit: %v", d)
	}
}
