package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAnArgumentWithoutItsValueIsNamed: `plugin_id =` with nothing after it on its line got
// HCL's "Invalid expression: Expected the start of an expression, but found an invalid
// expression token" at the line's end, with no caret under anything and no word of which
// argument, or that its value was missing; JSON's `"PluginID": }` got "Missing JSON value". The
// error names the argument, sits on its name and sign, and says what stands where the value
// should.
func TestAnArgumentWithoutItsValueIsNamed(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		line, col int
		arg       string
		found     string
	}{
		{"end of the line", "id = \"v1\"\nplugin_id =\ntype = \"csi\"\n", 2, 1, "plugin_id", "the end of the line"},
		{"end of the file", "id = \"v1\"\nplugin_id = ", 2, 1, "plugin_id", "the end of the file"},
		{"a comment", "id = \"v1\"\nplugin_id = # the plugin\n", 2, 1, "plugin_id", "a comment"},
		{"in a block", "id = \"v1\"\nmount_options {\n  fs_type =\n}\n", 3, 3, "fs_type", "the end of the line"},
		{"one-line block", "id = \"v1\"\ncapability { access_mode = }\n", 2, 14, "access_mode", "a closing brace"},
		{"a stray comma", "id = \"v1\"\nplugin_id = ,\n", 2, 1, "plugin_id", "a comma"},
		{"quoted key in a map", "id = \"v1\"\nparameters = { \"a b\" = }\n", 2, 16, "a b", "a closing brace"},
		{"HCL1 file", "\"id\" = \"v1\"\nplugin_id =\n", 2, 1, "plugin_id", "the end of the line"},
		{"a secret", "id = \"v1\"\nsecrets {\n  token =\n}\n", 3, 3, "token", "the end of the line"},
		{"JSON", "{\"ID\": \"v1\", \"PluginID\": }", 1, 14, "PluginID", "a closing brace"},
		{"JSON comma", "{\"ID\": \"v1\",\n  \"PluginID\": ,\n  \"Name\": \"x\"}", 2, 3, "PluginID", "a comma"},
		{"JSON nested", "{\"MountOptions\": {\"FSType\":\n}}", 1, 19, "FSType", "a closing brace"},
		{"JSON escaped key", `{"ID": "v1", "Plugin\"ID": }`, 1, 14, `Plugin"ID`, "a closing brace"},
	} {
		p, diags, d := firstErrorAt(t, tt.name, tt.src, fmt.Sprintf("Missing value for %q", tt.arg), tt.line, tt.col)
		if d == nil {
			continue
		}
		if !strings.Contains(d.Detail, "and then "+tt.found+", where its value must start") {
			t.Errorf("%s: %q does not say it found %s", tt.name, d.Detail, tt.found)
		}
		if out := renderPlain(p, diags); !strings.Contains(out, "^^^") {
			t.Errorf("%s: nothing underlined:\n%s", tt.name, out)
		}
	}
}

// TestAForsColonIsNoArgument: the colon of a for expression with nothing after it is HCL's
// "Invalid expression", not an argument named after the list it ranges over.
func TestAForsColonIsNoArgument(t *testing.T) {
	for _, src := range []string{
		"id = \"v1\"\nparameters = { for k in list : }\n",
		"id = \"v1\"\nx = [for v in list : ]\n",
	} {
		p := NewParser()
		_, diags := p.ParseVolume("v.hcl", []byte(src), VerbAny)
		for _, d := range diags {
			if strings.HasPrefix(d.Summary, "Missing value for") {
				t.Errorf("%q: %s", src, renderPlain(p, diags))
			}
		}
		if !diags.HasErrors() {
			t.Errorf("%q: accepted", src)
		}
	}
}

// TestNomadSpecsWithAValueCutAreNamed mutates every spec of the Nomad corpus: each argument
// written on one line, in turn, loses its value. The first error must name that argument, at
// its line and column (where HCL's "Invalid expression" named neither).
func TestNomadSpecsWithAValueCutAreNamed(t *testing.T) {
	corpus := nomadCorpus(t)
	arg := regexp.MustCompile(`^(\s*)("?[A-Za-z_][A-Za-z0-9_-]*"?)(\s*=\s*)(.+)$`)
	cases := 0
	for _, e := range readSources(t, corpus) {
		src, err := os.ReadFile(filepath.Join(corpus, e.file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		for i, line := range lines {
			m := arg.FindStringSubmatch(line)
			if m == nil || !oneLineValue(m[4]) {
				continue
			}
			cut := append(append(append([]string{}, lines[:i]...), m[1]+m[2]+m[3]), lines[i+1:]...)
			p := NewParser()
			_, diags := p.ParseVolume(e.file, []byte(strings.Join(cut, "\n")), e.verb)
			cases++
			name := strings.Trim(m[2], `"`)
			want := fmt.Sprintf("Missing value for %q", name)
			if len(diags) == 0 || diags[0].Summary != want || diags[0].Subject.Start.Line != i+1 || diags[0].Subject.Start.Column != len(m[1])+1 {
				t.Errorf("%s:%d: %s cut: want %q at %d:%d, got:\n%s", e.file, i+1, name, want, i+1, len(m[1])+1, renderPlain(p, diags))
			}
		}
	}
	if cases < 50 {
		t.Errorf("only %d arguments cut in the corpus", cases)
	}
}

// oneLineValue reports whether v, an argument's value, ends on its line: brackets and quotes
// balanced, no heredoc.
func oneLineValue(v string) bool {
	if strings.HasPrefix(v, "<<") || strings.Count(v, `"`)%2 != 0 {
		return false
	}
	depth := 0
	for _, c := range v {
		switch c {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
		}
	}
	return depth == 0
}
