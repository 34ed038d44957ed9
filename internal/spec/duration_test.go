package spec

import (
	"strings"
	"testing"
)

// TestDurationProblemsAreNamed: an agent setting or a plugin's timeout that time.ParseDuration
// refuses was said to be "not a duration" whatever was wrong: "9999999999999h", a duration
// longer than a time.Duration holds, was called no duration at all, and "1e3s" and "30" were
// not told their exponent or missing unit. Each says what is wrong, at the setting's line.
func TestDurationProblemsAreNamed(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"9999999999999h", `"9999999999999h" is longer than the longest duration volctl holds (2562047h`},
		{"2562048h", `longer than the longest duration`},
		{"1e309s", `"1e309s" is not a duration: a duration takes no exponent`},
		{"1.5E3ms", `takes no exponent`},
		{"30", `"30" is not a duration: it has no unit (ns, us, ms, s, m or h)`},
		{"soon", `"soon" is not a duration; write`},
		{"", `"" is not a duration; write`},
	} {
		for _, src := range []string{
			"agent {\n  gc_interval = \"" + tt.value + "\"\n}\n",
			"plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  timeout = \"" + tt.value + "\"\n}\n",
		} {
			p := NewParser()
			c, diags := p.ParseAgentConfig("agent.hcl", []byte(src))
			line := strings.Count(src[:strings.Index(src, " = \""+tt.value+"\"\n")], "\n") + 1
			if c != nil || len(diags) != 1 || !strings.Contains(diags[0].Detail, tt.want) || diags[0].Subject.Start.Line != line {
				t.Errorf("%q: want one error at line %d saying %q, got:\n%s", src, line, tt.want, renderPlain(p, diags))
			}
		}
	}
	for _, ok := range []string{"2562047h", "1.5h", "300ms", "1h30m"} {
		if _, err := ParseDuration(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
