package cli

import (
	"errors"
	"strings"
	"testing"
	"text/template"
)

// TestTemplateTextFuncsAreBounded: each template function that makes text refuses, before it
// makes any, arguments it could make more than maxFilterOutput of, and otherwise makes what the
// builtin or volctl's own function makes.
func TestTemplateTextFuncsAreBounded(t *testing.T) {
	big := strings.Repeat("<", 12<<20) // 6 times this is past 64 MiB
	call := func(name string, args ...any) (string, error) {
		f, ok := textFuncs[name]
		if !ok {
			f = templateFuncs[name]
		}
		switch f := f.(type) {
		case func(...any) (string, error):
			return f(args...)
		case func(string, ...any) (string, error):
			return f(args[0].(string), args[1:]...)
		case func(string, []any) (string, error):
			return f(args[0].(string), args[1].([]any))
		case func(string) (string, error):
			return f(args[0].(string))
		case func(any) (string, error):
			return f(args[0])
		}
		t.Fatalf("%s: %T", name, f)
		return "", nil
	}
	for _, tt := range []struct {
		name string
		args []any
	}{
		{"print", []any{big, big, big, big, big, big}},
		{"println", []any{big, big, big, big, big, big}},
		{"printf", []any{"%s%s%s%s%s%s", big, big, big, big, big, big}},
		{"printf", []any{"%x", big}},
		{"printf", []any{"%[1]s" + strings.Repeat("%[1]s", 600), big[:1<<20]}},
		{"printf", []any{strings.Repeat("%01000000d", 70), 1}},
		{"printf", []any{strings.Repeat("%.*d", 70), 1000000, 1}},
		{"html", []any{big}},
		{"js", []any{big}},
		{"urlquery", []any{big}},
		{"join", []any{big, []any{1, 2, 3, 4, 5, 6}}},
		{"upper", []any{big + big + big}},
		{"lower", []any{big + big + big}},
		{"json", []any{big}},
	} {
		if _, err := call(tt.name, tt.args...); !errors.Is(err, errTemplateText) || !strings.HasPrefix(err.Error(), tt.name+": ") {
			t.Errorf("%s: %v, want it refused naming %s", tt.name, err, tt.name)
		}
	}
	// Under the bound, each makes what text/template's builtin makes.
	for _, text := range []string{
		`{{printf "%05d|%-4s|%.2f|%[1]x|%v|%q" 42 "ab" 3.14159 .}}`, `{{print 1 2 "a" "b" 3}}`, `{{println "a" 1}}`,
		`{{html "<a&b>"}}`, `{{js "<'\\"}}`, `{{urlquery "a b&c"}}`, `{{printf "%*d" 5 1}}`,
	} {
		want := new(strings.Builder)
		if err := template.Must(template.New("").Parse(text)).Execute(want, []int{1}); err != nil {
			t.Fatal(err)
		}
		got := new(strings.Builder)
		if err := template.Must(parseTemplate(text)).Execute(got, []int{1}); err != nil || got.String() != want.String() {
			t.Errorf("%s = %q, %v; want %q", text, got, err, want)
		}
	}
	if got, err := call("join", ", ", []any{"a", 1}); got != "a, 1" || err != nil {
		t.Errorf("join = %q, %v", got, err)
	}
}
