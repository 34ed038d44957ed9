package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestUnclosedAtTheEndIsPlacedOnWhatIsOpen: a file that ends inside a heredoc, a map block or
// a list got HCL's error at its very end ("Unterminated template string" at the last line,
// shown with every line after the heredoc's and never the `<<EOT` line, nor the marker;
// "Missing expression ... found the end of the file" with no line shown at all), and the user
// had to hunt through the file for what was left open. The error is placed on the opener, and
// says what to add; a secret in the heredoc stays masked in the snippet.
func TestUnclosedAtTheEndIsPlacedOnWhatIsOpen(t *testing.T) {
	const head = "id        = \"db\"\nnamespace = \"default\"\ntype      = \"csi\"\nplugin_id = \"p\"\n\n# a comment\n"
	const capability = "capability {\n  access_mode     = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	filler := strings.Repeat("# more\n", 40)
	for _, tt := range []struct {
		name      string
		src       string
		line, col int
		summary   string
		words     []string
	}{
		{"heredoc without its marker", head + "name = <<EOT\nvolume\n" + filler + capability, 7, 8, "Unterminated heredoc",
			[]string{"<<EOT", "marker EOT", "holding only EOT"}},
		{"indented heredoc without its marker", head + capability + "secrets {\n  key = <<-PEM\n  hunter2hunter2\n" + filler, 12, 9, "Unterminated heredoc",
			[]string{"<<-PEM", "marker PEM"}},
		{"heredoc marker on the last line without a newline", head + capability + "name = <<EOF\nx\nEOF", 11, 8, "Unterminated heredoc",
			[]string{"ended by a newline"}},
		{"map block without its brace", head + capability + "parameters {\n  skuname = \"Premium_LRS\"\n" + filler, 11, 12, "Unclosed brace",
			[]string{"closing brace"}},
		{"string without its quote", head + capability + "name = \"vol", 11, 8, "Unterminated string",
			[]string{"closing quote"}},
	} {
		p, diags, d := firstErrorAt(t, tt.name, tt.src, tt.summary, tt.line, tt.col)
		if d == nil {
			continue
		}
		for _, w := range tt.words {
			if !strings.Contains(d.Detail, w) {
				t.Errorf("%s: %q does not say %q", tt.name, d.Detail, w)
			}
		}
		out := renderPlain(p, diags)
		if !strings.Contains(out, tt.src[d.Subject.Start.Byte:d.Subject.End.Byte]) {
			t.Errorf("%s: the opener is not shown:\n%s", tt.name, out)
		}
		if strings.Contains(out, "hunter2") {
			t.Errorf("%s: a secret shown:\n%s", tt.name, out)
		}
	}
}

// firstErrorAt parses src as a volume spec and returns its first diagnostic, when it is an
// error with summary at line:col; otherwise it says what came instead and returns nil.
func firstErrorAt(t *testing.T, name, src, summary string, line, col int) (*Parser, hcl.Diagnostics, *hcl.Diagnostic) {
	t.Helper()
	p := NewParser()
	_, diags := p.ParseVolume("v.hcl", []byte(src), VerbAny)
	if !diags.HasErrors() {
		t.Errorf("%s: accepted", name)
		return p, diags, nil
	}
	d := diags[0]
	if d.Subject == nil || d.Subject.Start.Line != line || d.Subject.Start.Column != col || d.Summary != summary {
		t.Errorf("%s: %q at %v, want %q at %d:%d:\n%s", name, d.Summary, d.Subject, summary, line, col, renderPlain(p, diags))
		return p, diags, nil
	}
	return p, diags, d
}

// TestAStringsBadByteIsOneError: a string holding a byte that is not UTF-8 (`id = "caf\xe9"`,
// Latin-1 from an old editor) or broken over a line got a second error at the same place,
// "Unterminated template string: No closing marker was found for the string", which is false
// (the string's quote is there) and sent the user looking for a quote. The one error that says
// what is wrong is kept.
func TestAStringsBadByteIsOneError(t *testing.T) {
	for _, src := range []string{
		"id = \"caf\xe9\"\ntype = \"csi\"\n",
		"id = \"a\nb\"\ntype = \"csi\"\n",
		"parameters {\n  k = \"v\xff\"\n}\n",
	} {
		p := NewParser()
		_, diags := p.ParseVolume("v.hcl", []byte(src), VerbAny)
		for _, d := range diags {
			if d.Summary == "Unterminated template string" {
				t.Errorf("%q: a string with its closing quote said to be unterminated:\n%s", src, renderPlain(p, diags))
			}
		}
		if !diags.HasErrors() {
			t.Errorf("%q: accepted", src)
		}
	}
}

// TestAnUnclosedJSONObjectIsNotSaidToBeNoObject: a JSON spec whose top-level object is not
// closed got, beside "Unclosed object", "Root value must be object: The root value in a
// JSON-based configuration must be either a JSON object or a JSON array of objects" at the same
// brace, which is false (it is an object) and sent the user looking at the wrong problem.
func TestAnUnclosedJSONObjectIsNotSaidToBeNoObject(t *testing.T) {
	for _, src := range []string{
		"{\n  \"id\": \"db\",\n  \"parameters\": {\n    \"a\": \"b\"\n",
		"{\n  \"id\": \"db\"\n",
	} {
		p := NewParser()
		_, diags := p.ParseVolume("v.json", []byte(src), VerbAny)
		unclosed := false
		for _, d := range diags {
			unclosed = unclosed || d.Summary == "Unclosed object"
			if d.Summary == "Root value must be object" {
				t.Errorf("%q: an object said not to be one:\n%s", src, renderPlain(p, diags))
			}
		}
		if !unclosed {
			t.Errorf("%q: not said to be unclosed:\n%s", src, renderPlain(p, diags))
		}
	}
}

// TestAMissingJSONCommaIsPlacedWhereItIsMissing: hcl/json reports a comma missing between two
// members or items after skipping to the end of the object, so the error stood at the file's
// end, with no line shown, and beside it "Root value must be object" at the first brace: in a
// spec of a hundred lines the user had to find the line that lacks its comma. The error is on
// the member or item that follows the value without one.
func TestAMissingJSONCommaIsPlacedWhereItIsMissing(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int
	}{
		{"{\n  \"id\": \"db\",\n  \"type\": \"csi\"\n  \"plugin_id\": \"ebs\"\n}\n", 4, 3},
		{"{\n  \"id\": \"db\",\n  \"mount_options\": {\"mount_flags\": [\"a\" \"b\"]},\n  \"type\": \"csi\"\n}\n", 3, 41},
		{"{\"id\": \"x\\\"y\", \"n\": 1 \"type\": \"csi\"}", 1, 23},
	} {
		p := NewParser()
		_, diags := p.ParseVolume("v.json", []byte(tt.src), VerbAny)
		found := false
		for _, d := range diags {
			if d.Summary == "Root value must be object" {
				t.Errorf("%q: an object said not to be one:\n%s", tt.src, renderPlain(p, diags))
			}
			if d.Summary == "Missing attribute seperator comma" || d.Summary == "Missing comma" {
				found = true
				if d.Subject.Start.Line != tt.line || d.Subject.Start.Column != tt.col {
					t.Errorf("%q: %q at %d:%d, want %d:%d:\n%s", tt.src, d.Summary, d.Subject.Start.Line, d.Subject.Start.Column, tt.line, tt.col, renderPlain(p, diags))
				}
			}
		}
		if !found {
			t.Errorf("%q: no missing comma reported:\n%s", tt.src, renderPlain(p, diags))
		}
	}
}
