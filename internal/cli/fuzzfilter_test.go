package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// placeInError reads the place an error of jqParseError or templateParseError names: the line
// (1 when the error names only a column) and the column, or ok false when it names none.
var placeInError = regexp.MustCompile(` at (?:line (\d+), )?column (\d+)`)

// checkPlace fails t unless every place err names lies in text: its line one of text's, its
// column at most one past the line's last character.
func checkPlace(t *testing.T, text string, err error) {
	t.Helper()
	for _, m := range placeInError.FindAllStringSubmatch(err.Error(), -1) {
		line, col := 1, 0
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		col, _ = strconv.Atoi(m[2])
		lines := strings.Split(text, "\n")
		if line < 1 || line > len(lines) || col < 1 || col > utf8.RuneCountInString(lines[line-1])+1 {
			t.Fatalf("%q: %v: line %d, column %d is not in the text (%d lines)", text, err, line, col, len(lines))
		}
		if m[1] == "" && len(lines) > 1 {
			t.Fatalf("%q: %v: a column without its line in a text of %d lines", text, err, len(lines))
		}
	}
}

// FuzzTemplateParse fuzzes the -t front end (parseTemplate): no panic; it refuses exactly the
// templates text/template refuses, with text/template's words (what it met), and any place it
// adds lies in the template.
func FuzzTemplateParse(f *testing.F) {
	for _, s := range []string{
		"{{.id}}", "{{range .}}{{.id}}\n{{end}}", "{{with index . \"x\"}}{{.}}{{end}}",
		"{{.id}} {{.name}", "é{{.id}", "{{range .}}\n  {{.id}} {{.name}\n{{end}}",
		"{{.id}} {{.name | uper}}", "{{.id}}\n{{end}}", "{{.id}} {{ else }}", "{{if}}x{{end}}",
		`{{.id}} {{printf "%s .name}}`, "{{.id}} {{.name", "{{.id}} {{/* note }}", "{{$x}}",
		"{{range .}}{{.id}}", "{{with .a}}{{if .b}}x{{else if .c}}y", `{{define "x"}}{{if .}}`,
		"{{`raw}}", "{{'c}}", "{{range .}}{{.id\n| printf \"%s}}\n{{end}}", "x {{.id\n .name", "{{(.a}}", "{{1.2.3}}", "{{- .a -}}", "{{- /* c */ -}}", `{{printf "{{" .a}`,
		"{{printf \"%s\\\n\" .id}} {{.name | printf \"%q}}", "{{'\\\n'}}{{'b}}", "{{-\t/* it's */}}\n{{'b}}", "{{ .name. }}", "{{.id}} {{.name.}}", "{{ 'ab' }}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		_, want := newTemplate().Parse(s)
		_, err := parseTemplate(s)
		if (err == nil) != (want == nil) {
			t.Fatalf("%q: err = %v, text/template's %v", s, err, want)
		}
		if err == nil {
			return
		}
		if err.Error() == want.Error() {
			return // left as text/template said it
		}
		what, line, _ := readParseError(want.Error()) // the place said is the exact one
		if !strings.HasPrefix(err.Error(), "template: "+what+" at ") {
			t.Fatalf("%q: err = %v, want text/template's %q and a place", s, err, what)
		}
		checkPlace(t, s, err)
		if what != "unexpected EOF" { // at the end, where text/template is too
			checkTemplatePlace(t, s, err, what, line)
		}
	})
}

// checkTemplatePlace fails t unless the place templateParseError gives err is on text/template's
// line and, when what (text/template's words) quotes a token, starts with that token ({{end}}
// and {{else}} with the action's "{{", "{{ end }}" being one too).
func checkTemplatePlace(t *testing.T, s string, err error, what string, line int) {
	t.Helper()
	m := placeInError.FindStringSubmatch(strings.TrimPrefix(err.Error(), "template: "+what))
	if m == nil {
		t.Fatalf("%q: %v: no place", s, err)
	}
	at, l := 0, 1
	if m[1] != "" {
		l, _ = strconv.Atoi(m[1])
	}
	if l != line {
		t.Fatalf("%q: %v: line %d, text/template's %d (%s)", s, err, l, line, what)
	}
	for range l - 1 {
		at += strings.IndexByte(s[at:], '\n') + 1
	}
	col, _ := strconv.Atoi(m[2])
	for range col - 1 {
		_, size := utf8.DecodeRuneInString(s[at:])
		at += size
	}
	quoted := quotedInError().FindAllString(what, -1)
	for _, q := range quoted {
		tok := strings.TrimPrefix(q, "constant: ")
		switch {
		case strings.HasPrefix(q, "{{"):
			tok = "{{"
		case strings.HasPrefix(q, "<"):
			tok = q[1 : len(q)-1]
		case strings.HasPrefix(q, `"`):
			tok, _ = strconv.Unquote(q)
		}
		if strings.HasPrefix(s[at:], tok) {
			return
		}
	}
	if len(quoted) > 0 {
		t.Fatalf("%q: %v: the place starts %.10q, not with a token of %q", s, err, s[at:], quoted)
	}
}

// FuzzJQParse fuzzes the --jq front end (compileJQ): no panic, and any place its error names
// lies in the filter.
func FuzzJQParse(f *testing.F) {
	for _, s := range []string{
		".", ".[] | .id", "map(.name)", ".a | ]", "map(.name) || 1", `"é" | ]`,
		".[] |\n  select(.x) |\n  ]", `.a + "\q"`, ".foo | map(.x", `.a "\(1)"`, ".a |\n  .b \"x\\(1)\"",
		`"\(`, "{a: 1,}", "[.[] | {id, name}]", "def f: f; f", "# comment\n.a", "@base64d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		if _, err := compileJQ(s); err != nil {
			checkPlace(t, s, err)
		}
	})
}
