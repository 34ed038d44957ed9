package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

const (
	pluginSpec = "plugin \"hp\" {\n  type   = \"monolith\"\n  socket = \"/run/hp.sock\"\n}\n"
	groupSpec  = "# web\ngroup \"web\" {\n  volume \"data\" {\n    type = \"csi\"\n    source = \"db\"\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n"
	agentSpec  = "agent {\n  probe_interval = \"5s\"\n}\n" + pluginSpec
	jobFile    = "# the job\njob \"web\" {\n  datacenters = [\"*\"]\n" + groupSpec + "}\n"
)

// parseAs parses src as a command expecting kind does; kind "" is `volctl validate`.
func parseAs(kind Kind, name, src string) hcl.Diagnostics {
	p := NewParser()
	switch kind {
	case KindVolume:
		_, diags := p.ParseVolume(name, []byte(src), VerbCreate)
		return diags
	case KindPlugin:
		_, diags := p.ParsePlugins(name, []byte(src))
		return diags
	case KindGroup:
		_, diags := p.ParseGroup(name, []byte(src))
		return diags
	}
	_, diags := p.Parse(name, []byte(src), VerbAny)
	return diags
}

// TestWrongKindIsOneError gives each command each other kind of file: one error, at the name
// that tells the kind, saying what the file is and which command takes it.
func TestWrongKindIsOneError(t *testing.T) {
	tests := []struct {
		name      string
		want      Kind // the command's kind; "" is validate
		file, src string
		summary   string
		detail    string
		line, col int
	}{
		{"plugin to volume", KindVolume, "plugin.hcl", pluginSpec, "Not a volume spec",
			`This is a plugin spec, not a volume spec: register it with "volctl plugin register plugin.hcl".`, 1, 1},
		{"group to volume", KindVolume, "group.hcl", groupSpec, "Not a volume spec",
			`This is a group spec, not a volume spec: run it with "volctl group run group.hcl".`, 2, 1},
		{"agent to volume", KindVolume, "agent.hcl", agentSpec, "Not a volume spec",
			`This is an agent config, not a volume spec: use it with "volctl agent --config agent.hcl".`, 1, 1},
		{"agent settings only to volume", KindVolume, "agent.hcl", "\nagent {\n}\n", "Not a volume spec",
			`This is an agent config, not a volume spec`, 2, 1},
		{"volume to plugin", KindPlugin, "volume.hcl", baseVolume, "Not a plugin spec",
			`This is a volume spec, not a plugin spec: register it with "volctl volume register volume.hcl" or create it with "volctl volume create volume.hcl".`, 3, 1},
		{"volume with external_id to plugin", KindPlugin, "volume.hcl", baseVolume + "external_id = \"v\"\n", "Not a plugin spec",
			`register it with "volctl volume register volume.hcl".`, 3, 1},
		{"volume from a snapshot to plugin", KindPlugin, "volume.hcl", baseVolume + "snapshot_id = \"s\"\n", "Not a plugin spec",
			`create it with "volctl volume create volume.hcl".`, 3, 1},
		{"legacy flat volume to plugin", KindPlugin, "volume.hcl", "id = \"db\"\ntype = \"csi\"\naccess_mode = \"single-node-writer\"\n", "Not a plugin spec",
			`This is a volume spec, not a plugin spec`, 3, 1},
		{"group to plugin", KindPlugin, "group.hcl", groupSpec, "Not a plugin spec",
			`This is a group spec, not a plugin spec: run it with "volctl group run group.hcl".`, 2, 1},
		{"agent to plugin", KindPlugin, "agent.hcl", agentSpec, "Not a plugin spec",
			`This is an agent config, not a plugin spec: use it with "volctl agent --config agent.hcl".`, 1, 1},
		{"volume to group", KindGroup, "volume.hcl", baseVolume, "Not a group spec",
			`This is a volume spec, not a group spec: register it with "volctl volume register volume.hcl" or create it with "volctl volume create volume.hcl".`, 3, 1},
		{"plugin to group", KindGroup, "plugin.hcl", pluginSpec, "Not a group spec",
			`This is a plugin spec, not a group spec: register it with "volctl plugin register plugin.hcl".`, 1, 1},
		{"agent to group", KindGroup, "agent.hcl", agentSpec, "Not a group spec",
			`This is an agent config, not a group spec: use it with "volctl agent --config agent.hcl".`, 1, 1},
		{"agent to validate", "", "agent.hcl", agentSpec, "Not a volume, plugin or group spec",
			`This is an agent config, which volctl validate does not check: "volctl agent --config agent.hcl" checks it (and starts the agent when it is valid).`, 1, 1},
		{"agent settings only to validate", "", "agent.hcl", "# settings\nagent {\n  stop_timeout = \"1s\"\n}\n", "Not a volume, plugin or group spec",
			`This is an agent config, which volctl validate does not check`, 2, 1},
		// A Nomad job file, whose group's volume blocks are what a group spec holds: one error,
		// saying how to make a group spec of it (before: five about a volume spec's arguments
		// to validate, "Blocks of type job are not expected" to group run).
		{"job to group", KindGroup, "web.nomad.hcl", jobFile, "Not a group spec",
			`This is a Nomad job file, not a group spec: volctl runs a group spec, one group block of the job's (its volume blocks as they are, count)` +
				` with a volume_mount block beside them for each task's, its destination a path on this host ("volctl init group" writes an example).`, 2, 1},
		{"job to volume", KindVolume, "web.nomad.hcl", jobFile, "Not a volume spec",
			`This is a Nomad job file, not a volume spec: volctl runs a group spec`, 2, 1},
		{"job to validate", "", "web.nomad.hcl", jobFile, "Not a volume, plugin or group spec",
			`This is a Nomad job file, which volctl does not read: volctl runs a group spec`, 2, 1},
		// JSON, and HCL1 syntax (rewritten before parsing): still the file's own positions.
		{"JSON volume to plugin", KindPlugin, "v.json", `{"id": "db", "type": "csi", "plugin_id": "x", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}`, "Not a plugin spec",
			`This is a volume spec, not a plugin spec`, 1, 29},
		{"JSON plugin to volume", KindVolume, "p.json", `{"plugin": {"hp": {"type": "monolith", "socket": "/run/hp.sock"}}}`, "Not a volume spec",
			`This is a plugin spec, not a volume spec: register it with "volctl plugin register p.json".`, 1, 2},
		{"JSON group to volume", KindVolume, "g.json", "{\n  \"group\": {\"web\": {}}\n}", "Not a volume spec",
			`This is a group spec`, 2, 3},
		{"HCL1 plugin to volume", KindVolume, "p.hcl", "# one line\n  plugin \"hp\" { type = \"node\", \"socket\" = \"/s\" }\n", "Not a volume spec",
			`This is a plugin spec`, 2, 3},
		{"HCL1 volume to plugin", KindPlugin, "v.hcl", "\"id\" = \"db\", \"plugin_id\" = \"x\"\ntype = \"csi\"\n", "Not a plugin spec",
			`This is a volume spec`, 1, 15},
		// The command shown is one to type: standard input is "-", odd names are quoted.
		{"from standard input", KindVolume, StdinName, pluginSpec, "Not a volume spec",
			`register it with "volctl plugin register -".`, 1, 1},
		{"name with a space", KindVolume, "my plugin.hcl", pluginSpec, "Not a volume spec",
			`register it with "volctl plugin register 'my plugin.hcl'".`, 1, 1},
		{"name like a flag", KindGroup, "-p.hcl", pluginSpec, "Not a group spec",
			`register it with "volctl plugin register ./-p.hcl".`, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := parseAs(tt.want, tt.file, tt.src)
			if len(diags) != 1 {
				t.Fatalf("want 1 diagnostic, got %d: %v", len(diags), diags)
			}
			d := diags[0]
			if d.Severity != hcl.DiagError || d.Summary != tt.summary || !strings.Contains(d.Detail, tt.detail) {
				t.Errorf("got %q: %q\nwant %q with %q", d.Summary, d.Detail, tt.summary, tt.detail)
			}
			if d.Subject == nil || d.Subject.Filename != tt.file || d.Subject.Start.Line != tt.line || d.Subject.Start.Column != tt.col {
				t.Errorf("at %v, want %s:%d:%d", d.Subject, tt.file, tt.line, tt.col)
			}
		})
	}
}

// TestBrokenSpecIsNotWrongKind: a file with anything of the command's own kind is a broken
// spec of that kind, not another kind, and keeps its detailed diagnostics.
func TestBrokenSpecIsNotWrongKind(t *testing.T) {
	tests := []struct {
		name   string
		want   Kind
		src    string
		errors []string // summaries expected among the diagnostics
	}{
		{"volume with unknown arguments", KindVolume, "id = \"db\"\ntype = \"csi\"\nplugn_id = \"x\"\nsize = \"1G\"\n",
			[]string{"Unsupported argument", "Missing required argument", "Missing capability"}},
		{"volume with a stray plugin block", KindVolume, baseVolume + "name = \"db\"\n" + pluginSpec,
			[]string{"Unsupported block type"}},
		{"volume with a stray group block", KindVolume, baseVolume + "name = \"db\"\ngroup \"web\" {\n}\n",
			[]string{"Unsupported block type"}},
		{"volume with a stray agent block", KindVolume, baseVolume + "name = \"db\"\nagent {\n}\n",
			[]string{"Unsupported block type"}},
		{"plugin written without its block", KindPlugin, "id = \"hp\"\ntype = \"monolith\"\nsocket = \"/run/hp.sock\"\n",
			[]string{"Missing plugin block", "Unsupported argument"}},
		{"plugin block beside volume arguments", KindPlugin, pluginSpec + "plugin_id = \"hp\"\n",
			[]string{"Unsupported argument"}},
		{"plugin spec with a stray agent setting", KindPlugin, "agent {\n}\n" + pluginSpec + "timeout = \"1s\"\n",
			[]string{"Unsupported block type", "Unsupported argument"}},
		{"group written without its block", KindGroup, "count = 2\nvolume \"data\" {\n}\n",
			[]string{"Missing group block", "Unsupported argument", "Unsupported block type"}},
		{"group block beside a capability", KindGroup, groupSpec + "capability {\n}\n",
			[]string{"Unsupported block type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := parseAs(tt.want, "t.hcl", tt.src)
			got := map[string]bool{}
			for _, d := range diags {
				got[d.Summary] = true
				if strings.HasPrefix(d.Summary, "Not a ") {
					t.Errorf("taken for another kind: %v", d)
				}
			}
			for _, s := range tt.errors {
				if !got[s] {
					t.Errorf("no %q among %v", s, diags)
				}
			}
		})
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"plugin.hcl":     "plugin.hcl",
		"/etc/volctl/x":  "/etc/volctl/x",
		StdinName:        "-",
		"a b.hcl":        "'a b.hcl'",
		"it's.hcl":       `'it'\''s.hcl'`,
		"-x.hcl":         "./-x.hcl",
		"$HOME/x.hcl":    "'$HOME/x.hcl'",
		"data[0].hcl":    "'data[0].hcl'",
		"ünïcode.hcl":    "'ünïcode.hcl'",
		"v1.2_final.hcl": "v1.2_final.hcl",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
