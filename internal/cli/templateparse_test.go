package cli

import (
	"strings"
	"testing"
)

// TestTemplateParseErrorSaysWhere: a -t template text/template cannot parse was refused with
// its line alone ("template: output:1: bad character U+007D '}'"), where --jq's errors say the
// column: in a template of several actions alike the user had to find it. The error says the
// column, and the line in a template of several; the templates users write wrong most often
// (a brace missing, an {{end}} too many or missing, a function misspelt, a quote left open).
func TestTemplateParseErrorSaysWhere(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	for _, tt := range []struct{ tmpl, want string }{
		{"{{.id}} {{.name}", `bad character U+007D '}' at column 16`},
		{"é{{.id}", `bad character U+007D '}' at column 7`}, // columns count characters, not bytes
		{"{{range .}}\n  {{.id}} {{.name}\n{{end}}", `bad character U+007D '}' at line 2, column 18`},
		{"{{.id}} {{.name | uper}}", `function "uper" not defined at column 19`},
		{"{{.id}}\n{{end}}", "unexpected {{end}} at line 2, column 1"},
		{"{{.id}} {{ else }}", "unexpected {{else}} at column 9"},
		{"{{.id}} {{if}}x{{end}}", "missing value for if at column 9"},
		{`{{.id}} {{printf "%s .name}}`, "unterminated quoted string at column 18"},
		{"{{.id}} {{.name", "unclosed action at column 9"},
		// text/template's words for an action of several lines ("in action started at
		// output:1") go: the place is exact
		{"{{range .}}{{.id\n| printf \"%s}}\n{{end}}", "template: unterminated quoted string at line 2, column 10"},
		{"x {{.id\n .name", "template: unclosed action at line 1, column 3"},
		{"{{.id}} {{/* note }}", "unclosed comment at column 11"},
		{"{{.id}} {{$x}}", `undefined variable "$x" at column 11`},
		{"{{range .}}{{.id}}", "unexpected EOF at the end of the template: the {{range}} at column 1 has no {{end}}"},
		{"{{.id}}\n{{with .a}}{{if .b}}x{{end}}", "unexpected EOF at the end of the template: the {{with}} at line 2, column 1 has no {{end}}"},
	} {
		_, err := execRoot(t, "volume", "status", "-t", tt.tmpl)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("-t %q: err = %v (exit %d), want exit %d saying %q", tt.tmpl, err, ExitCode(err), ExitUsage, tt.want)
		}
	}
}

// TestTemplateParseErrorPlaceIsBounded: finding the place parses the template again, some
// times; a template of megabytes (text/template parses a few a second) keeps the line alone
// rather than take seconds more to be refused.
func TestTemplateParseErrorPlaceIsBounded(t *testing.T) {
	_, err := parseTemplate(strings.Repeat("x", templateParseErrorBudget) + "{{.b}")
	if err == nil || err.Error() != "template: output:1: bad character U+007D '}'" {
		t.Errorf("err = %v, want text/template's own", err)
	}
	_, err = parseTemplate(strings.Repeat("{{if .}}", templateParseErrorBudget/16/8+1))
	if err == nil || err.Error() != "template: unexpected EOF at the end of the template" {
		t.Errorf("err = %v, want the end without the block", err)
	}
}

// TestTemplateRunErrorSaysWhere: an error of a template's run said text/template's place,
// "output:1:3" for `{{ .Foo }}`, a column counted in bytes from 0, where -t's parse errors and
// --jq's count characters from 1: the same template's two errors pointed at places one apart,
// more after a non-ASCII character. It says the column as they do.
func TestTemplateRunErrorSaysWhere(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	for _, tt := range []struct{ tmpl, want string }{
		// Refused before the run now, as no volume list has a field (checkReadTemplate): at
		// the same column. The run's own error, for a field read through what a function gives
		// (left to the run; a variable given dot is followed since round 61), says its column too.
		{"{{ .Foo }}", ".Foo reads a field of a list, which has none, at column 4"},
		{"{{$v := slice .}}{{ $v.Foo }}", "can't evaluate field Foo in type []interface {} at column 23"},
		{`{{printf "%s" 1}}é {{ index . 3 }}`, "index out of range: 3 at column 23"},
		{"é\n {{ index . 3 }}", "index out of range: 3 at line 2, column 5"},
		{`{{define "x"}}{{.a}}{{end}}{{template "x" 1}}`, `executing "x" at <.a>: can't evaluate field a in type int at column 17`},
	} {
		_, err := execRoot(t, "volume", "status", "-t", tt.tmpl)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "output:") {
			t.Errorf("-t %q: err = %v (exit %d), want exit %d saying %q", tt.tmpl, err, ExitCode(err), ExitUsage, tt.want)
		}
	}
}

// TestTemplateParseErrorReadsAsTheLexer: the scan that finds a string, constant or comment
// left open read a template differently from text/template's lexer, and the error named
// another line: a backslash before a newline leaves a string or character constant
// unterminated for the lexer (the scan took a quote on the next line as its end), and "{{-"
// with a tab or a newline before "/*" opens a comment (the scan knew "{{- " alone).
func TestTemplateParseErrorReadsAsTheLexer(t *testing.T) {
	for _, tt := range []struct{ tmpl, want string }{
		{"{{printf \"%s\\\n\" .id}} {{.name | printf \"%q}}", "template: unterminated quoted string at line 1, column 10"},
		{"{{'\\\n'}}{{'b}}", "template: unterminated character constant at line 1, column 3"},
		{"{{-\t/* it's */}}\n{{'b}}", "template: unterminated character constant at line 2, column 3"},
		{"{{-\n/* it's */}}\n{{'b}}", "template: unterminated character constant at line 3, column 3"},
	} {
		_, err := parseTemplate(tt.tmpl)
		if err == nil || err.Error() != tt.want {
			t.Errorf("-t %q: err = %v, want %q", tt.tmpl, err, tt.want)
		}
	}
}

// TestTemplateParseErrorColumnIsTheToken: text/template's lexer reads a character or two past
// a token before the parser refuses it, so the shortest cut that fails ends after the token:
// the column named the character after it (or the action's start), not the token the error
// quotes; and an error quoting a character constant ("malformed character constant: 'ab'")
// was not read as quoting a token.
func TestTemplateParseErrorColumnIsTheToken(t *testing.T) {
	for _, tt := range []struct{ tmpl, want string }{
		{"{{ .name. }}", " at column 9"},
		{"{{.id}} {{.name.}}", " at column 16"},
		{"{{ 'ab' }}", "template: malformed character constant: 'ab' at column 4"},
		// a byte of invalid UTF-8 is a character to the lexer: the cut after "08" was not tried
		{"{{08\x89\x890", `template: integer overflow: "08" at column 3`},
	} {
		_, err := parseTemplate(tt.tmpl)
		if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("-t %q: err = %v, want it to end %q", tt.tmpl, err, tt.want)
		}
	}
}
