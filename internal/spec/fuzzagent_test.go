package spec

import (
	"reflect"
	"slices"
	"testing"
)

// agentConfigSeeds are agent configs for FuzzParseAgentConfig: docs/agent.md's, each form a
// setting is written in (HCL2, HCL1, JSON), and the durations a setting must refuse.
var agentConfigSeeds = []string{
	"agent {\n  probe_interval       = \"5s\"\n  probe_interval_ready = \"30s\"\n  health_timeout       = \"30s\"\n  gc_interval          = \"1m\"\n  reconcile_interval   = \"1m\"\n  stop_timeout         = \"10s\"\n}\n\n" +
		"plugin \"hostpath\" {\n  type   = \"monolith\"\n  socket = \"/run/volctl/hostpath.sock\"\n  exec {\n    command = \"/usr/local/bin/volctl\"\n" +
		"    args    = [\"plugin\", \"serve\", \"hostpath\", \"--root\", \"/var/lib/volctl-hostpath\", \"--node-id\", \"node-1\"]\n    env = { A = \"b\" }\n  }\n}\n",
	"agent { probe_interval = \"5s\" }\nplugin \"p\" { type = \"node\", socket = \"/run/p.sock\" }\n",
	`{"agent": {"gc_interval": "1m"}, "plugin": {"p": {"type": "monolith", "socket": "/run/p.sock"}}}`,
	"agent {\n  probe_interval = \"-5s\"\n  gc_interval = \"1e309s\"\n  stop_timeout = \"0\"\n  health_timeout = 5\n}\n",
	"agent {\n  probe_intervall = \"5s\"\n}\nagent {\n  gc_interval = \"1m\"\n}\n",
	"agent {\n  reconcile_interval = \"9999999999999h\"\n  probe_interval_ready = \"\"\n}\n",
}

// FuzzParseAgentConfig feeds ParseAgentConfig (volctl agent --config) arbitrary bytes, as
// FuzzParseVolume feeds the volume parser: no panic; a config is returned exactly when there
// is no error; every diagnostic range lies inside the file; every setting it accepts is a
// known one and more than zero; every plugin it accepts passes Plugin.Validate; a second
// parse gives the same config and diagnostics.
func FuzzParseAgentConfig(f *testing.F) {
	for _, s := range agentConfigSeeds {
		f.Add([]byte(s))
	}
	src, _ := Example(KindPlugin)
	f.Add(src)
	f.Fuzz(func(t *testing.T, src []byte) {
		p := NewParser()
		c, diags := p.ParseAgentConfig("agent.hcl", src)
		checkParseResult(t, p, src, diags, c != nil)
		if c != nil {
			for name, d := range c.Settings {
				if !slices.Contains(AgentSettings, name) || d <= 0 {
					t.Fatalf("accepted setting %s = %s", name, d)
				}
			}
			for _, pl := range c.Plugins {
				if err := pl.Validate(); err != nil {
					t.Fatalf("accepted plugin %+v, which Validate refuses: %v", pl, err)
				}
			}
		}
		p2 := NewParser()
		c2, diags2 := p2.ParseAgentConfig("agent.hcl", src)
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("second parse differs:\n%+v\n%+v", c, c2)
		}
		if a, b := renderPlain(p, diags), renderPlain(p2, diags2); a != b {
			t.Fatalf("second parse reports differently:\n%s\n---\n%s", a, b)
		}
	})
}
