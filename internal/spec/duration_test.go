package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
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

// TestAgentSettingsOutsideTheirBoundsAreRefused: an agent setting had only to be more than
// zero, so probe_interval = "1ns" probed in a busy loop, gc_interval = "1ns" wrote the state
// back to back, stop_timeout = "1ns" sent SIGKILL with SIGTERM, and stop_timeout = "1000000h"
// let a stopping agent wait 114 years on a plugin that ignores SIGTERM. Each is refused at its
// line, its bounds said.
func TestAgentSettingsOutsideTheirBoundsAreRefused(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"probe_interval", "1ns", `probe_interval: 1ns is less than the least it may be, 100ms (probing more often keeps`},
		{"probe_interval_ready", "10us", `probe_interval_ready: 10µs is less than the least it may be, 100ms`},
		{"gc_interval", "1ns", `gc_interval: 1ns is less than the least it may be, 1s (each claim GC pass writes the state)`},
		{"reconcile_interval", "1ms", `reconcile_interval: 1ms is less than the least it may be, 100ms`},
		{"health_timeout", "10ms", `health_timeout: 10ms is less than the least it may be, 1s`},
		{"stop_timeout", "1ns", `stop_timeout: 1ns is less than the least it may be, 1s`},
		{"stop_timeout", "1000000h", `stop_timeout: 1000000h0m0s is more than the most it may be, 1h0m0s`},
		{"health_timeout", "2562047h", `health_timeout: 2562047h0m0s is more than the most it may be, 24h0m0s`},
		{"probe_interval", "0s", `probe_interval: must be more than zero`},
	} {
		src := "agent {\n  " + tt.name + " = \"" + tt.value + "\"\n}\n"
		p := NewParser()
		c, diags := p.ParseAgentConfig("agent.hcl", []byte(src))
		if c != nil || len(diags) != 1 || diags[0].Subject.Start.Line != 2 || !strings.Contains(diags[0].Detail, tt.want) {
			t.Errorf("%q: want one error at line 2 saying %q, got:\n%s", src, tt.want, renderPlain(p, diags))
		}
	}
}

// TestAgentSettingBoundsAreAccepted: each setting's least and most are accepted, a nanosecond
// beyond either refused.
func TestAgentSettingBoundsAreAccepted(t *testing.T) {
	for _, name := range AgentSettings {
		least, most := agentSettingBounds[name].Least, agentSettingBounds[name].Most
		if least <= 0 || most < least {
			t.Fatalf("%s: bounds %s..%s", name, least, most)
		}
		for _, tt := range []struct {
			d    time.Duration
			want string // "" accepted
		}{
			{least - time.Nanosecond, `is less than the least it may be, ` + least.String()},
			{least, ""},
			{most, ""},
			{most + time.Nanosecond, `is more than the most it may be, ` + most.String()},
		} {
			src := "agent {\n  " + name + " = \"" + tt.d.String() + "\"\n}\n"
			p := NewParser()
			c, diags := p.ParseAgentConfig("agent.hcl", []byte(src))
			if tt.want == "" {
				if c == nil || c.Settings[name] != tt.d || len(diags) != 0 {
					t.Errorf("%q: want it accepted, got:\n%s", src, renderPlain(p, diags))
				}
				continue
			}
			if c != nil || len(diags) != 1 || !strings.Contains(diags[0].Detail, name+": ") || !strings.Contains(diags[0].Detail, tt.want) {
				t.Errorf("%q: want one error naming %s and saying %q, got:\n%s", src, name, tt.want, renderPlain(p, diags))
			}
		}
	}
}

// TestPluginTimeoutOutsideItsBoundsIsRefused: a plugin's timeout had only to be more than
// zero: timeout = "1ns" failed every create, publish and stage at once, blaming the plugin
// ("did not complete the gRPC handshake within 1ns"), and left a created volume "creating",
// which nothing could finish under that timeout. Outside its bounds it is refused at its line,
// in a plugin file and an agent config alike, and by Validate (plugin register's flags).
func TestPluginTimeoutOutsideItsBoundsIsRefused(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"1ns", `timeout: 1ns is less than the least it may be, 1s (a long RPC, a create or a publish, needs that long)`},
		{"999ms", `timeout: 999ms is less than the least it may be, 1s`},
		{"1000000h", `timeout: 1000000h0m0s is more than the most it may be, 24h0m0s`},
		{"1s", ""},
		{"24h", ""},
	} {
		src := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  timeout = \"" + tt.value + "\"\n}\n"
		for _, parse := range []func(p *Parser) (bool, hcl.Diagnostics){
			func(p *Parser) (bool, hcl.Diagnostics) {
				c, d := p.ParseAgentConfig("agent.hcl", []byte(src))
				return c != nil, d
			},
			func(p *Parser) (bool, hcl.Diagnostics) {
				c, d := p.ParsePlugins("plugin.hcl", []byte(src))
				return c != nil, d
			},
		} {
			p := NewParser()
			ok, diags := parse(p)
			switch {
			case tt.want == "" && (!ok || len(diags) != 0):
				t.Errorf("%q: want it accepted, got:\n%s", src, renderPlain(p, diags))
			case tt.want != "" && (ok || len(diags) != 1 || diags[0].Subject.Start.Line != 4 || !strings.Contains(diags[0].Detail, tt.want)):
				t.Errorf("%q: want one error at line 4 saying %q, got:\n%s", src, tt.want, renderPlain(p, diags))
			}
		}
		d, _ := ParseDuration(tt.value)
		err := (&Plugin{ID: "p", Type: PluginMonolith, Socket: "/run/p.sock", Timeout: d}).Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), `plugin "p": `+tt.want)) {
			t.Errorf("Validate of timeout %s: %v, want %q", tt.value, err, tt.want)
		}
	}
}
