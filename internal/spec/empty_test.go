package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestAnEmptySpecSaysSo: a spec with nothing in it (`generate | volctl volume register -` where
// the generator failed and wrote nothing, a file truncated, one of comments only) got an
// error for every argument a volume needs ("The argument "id" is required", type, plugin_id,
// external_id, a capability: five for an empty pipe), none of which says the input was empty.
// It gets one error saying so, what the kind needs and how to start one; standard input's
// says what an empty pipe usually means.
func TestAnEmptySpecSaysSo(t *testing.T) {
	for _, tt := range []struct {
		name, file, src string
		kind            Kind
		verb            Verb
		words           []string
	}{
		{"empty pipe", StdinName, "", KindVolume, VerbRegister, []string{"Standard input", "empty", "may have failed", "volctl init volume"}},
		{"empty file", "v.hcl", "", KindVolume, VerbCreate, []string{"v.hcl is empty", "volctl init volume"}},
		{"comments only", "v.hcl", "# a volume\n\n// later\n", KindVolume, VerbAny, []string{"nothing but comments", "id, type, plugin_id"}},
		{"blank lines", "v.hcl", "\r\n\n  \t\n", KindVolume, VerbAny, []string{"nothing but comments", "volctl init volume"}},
		{"empty JSON object", "v.json", "{}\n", KindVolume, VerbAny, []string{"empty JSON object"}},
		{"plugin spec", "p.hcl", "\n", KindPlugin, VerbAny, []string{"a plugin block", "volctl init plugin"}},
		{"group spec", StdinName, "", KindGroup, VerbAny, []string{"Standard input", "a group block", "volctl init group"}},
		{"any kind", "x.hcl", "", "", VerbAny, []string{"x.hcl is empty", "volctl init volume|plugin|group"}},
	} {
		p := NewParser()
		var diags = func() []string {
			var out []string
			_, ds := p.parse(tt.file, []byte(tt.src), tt.kind, tt.verb)
			for _, d := range ds {
				out = append(out, d.Summary+": "+d.Detail)
			}
			return out
		}()
		if len(diags) != 1 || !strings.HasPrefix(diags[0], "Empty spec: ") {
			t.Errorf("%s: %d diagnostics, want one saying the spec is empty:\n%s", tt.name, len(diags), strings.Join(diags, "\n"))
			continue
		}
		for _, w := range tt.words {
			if !strings.Contains(diags[0], w) {
				t.Errorf("%s: %q does not say %q", tt.name, diags[0], w)
			}
		}
	}
}

// TestAnEmptyAgentConfigIsWarnedOf: an agent config with nothing in it (no bytes, comments
// only, {} or [] in JSON: a template that failed, a truncated copy) was taken without a word,
// and the agent ran with none of the settings and plugins its operator had given it. It is
// still taken, as a config of comments a package may ship, but with a warning saying so.
func TestAnEmptyAgentConfigIsWarnedOf(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"agent.hcl", "", "agent.hcl is empty. The agent runs with its default settings and the plugins already registered, as without --config"},
		{"agent.hcl", "# agent { probe_interval = \"5s\" }\n\n", "agent.hcl holds nothing but comments and blank lines."},
		{"agent.json", "{}", "agent.json holds an empty JSON object or array."},
		{"agent.json", "[]", "agent.json holds an empty JSON object or array."},
		{StdinName, "", "Standard input is empty: the command writing to the pipe may have failed, or written nothing."},
	} {
		c, diags := NewParser().ParseAgentConfig(tt.name, []byte(tt.src))
		if c == nil || diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning ||
			diags[0].Summary != "Empty agent config" || !strings.Contains(diags[0].Detail, tt.want) {
			t.Errorf("%s %q: config %v, %v; want it taken with one warning, \"Empty agent config\", saying %q", tt.name, tt.src, c, diags, tt.want)
		}
	}
	if _, diags := NewParser().ParseAgentConfig("agent.hcl", []byte("agent {}\n")); len(diags) != 0 {
		t.Errorf("agent {}: %v; want no diagnostic (it is a config, with every setting the default)", diags)
	}
}
