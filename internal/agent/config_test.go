package agent

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/volctl/volctl/internal/spec"
)

// parseConfig reads an agent config as `volctl agent --config` does: spec parses it, NewFile
// makes the agent's File of it. It returns the parser, which renders the diagnostics.
func parseConfig(filename string, src []byte) (*File, *spec.Parser, hcl.Diagnostics) {
	p := spec.NewParser()
	c, diags := p.ParseAgentConfig(filename, src)
	if c == nil {
		return nil, p, diags
	}
	return NewFile(c), p, diags
}

func TestParseConfig(t *testing.T) {
	src := `# the agent's own settings
agent {
  probe_interval       = "2s"
  probe_interval_ready = "1m"
  health_timeout       = "45s"
  gc_interval          = "30s"
  reconcile_interval   = "5m"
  stop_timeout         = "20s"
}

plugin "hostpath" {
  type   = "monolith"
  socket = "/run/volctl/hostpath.sock"
  exec {
    command = "/usr/local/bin/volctl"
    args    = ["plugin", "serve", "hostpath", "--root", "/srv/hp", "--node-id", "n1"]
    env     = { TOKEN = "s3cr3t" }
  }
}

plugin "nfs" {
  type   = "node"
  socket = "/run/csi/nfs.sock"
}
`
	f, _, diags := parseConfig("agent.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := Settings{ProbeInterval: 2 * time.Second, ProbeIntervalReady: time.Minute, HealthTimeout: 45 * time.Second,
		GCInterval: 30 * time.Second, ReconcileInterval: 5 * time.Minute, StopTimeout: 20 * time.Second}
	if f.Settings != want {
		t.Errorf("settings = %+v, want %+v", f.Settings, want)
	}
	if len(f.Plugins) != 2 || f.Plugins[0].ID != "hostpath" || f.Plugins[1].ID != "nfs" {
		t.Fatalf("plugins = %v", f.Plugins)
	}
	hp := f.Plugins[0]
	if hp.Exec == nil || hp.Exec.Command != "/usr/local/bin/volctl" || len(hp.Exec.Args) != 7 || hp.Exec.Env.Plain()["TOKEN"] != "s3cr3t" {
		t.Errorf("hostpath exec = %+v", hp.Exec)
	}
	if f.Plugins[1].NodeSocket != "/run/csi/nfs.sock" || f.Plugins[1].Exec != nil {
		t.Errorf("nfs = %+v", f.Plugins[1])
	}
}

func TestParseConfigOptionalParts(t *testing.T) {
	tests := []struct {
		name, src   string
		wantPlugins int
		want        Settings
	}{
		{"empty file", "", 0, Settings{}},
		{"agent block only", `agent { health_timeout = "10s" }`, 0, Settings{HealthTimeout: 10 * time.Second}},
		{"plugins only", `plugin "a" {
  type = "monolith"
  socket = "/run/a.sock"
}`, 1, Settings{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, diags := parseConfig("agent.hcl", []byte(tt.src))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if len(f.Plugins) != tt.wantPlugins || f.Settings != tt.want {
				t.Fatalf("got %+v", f)
			}
		})
	}
}

// Every problem is reported at once, at the line and column where it is, plugin blocks
// after the agent block included, and secrets never appear in the rendering.
func TestParseConfigDiagnostics(t *testing.T) {
	src := `agent {
  probe_interval = "soon"
  health_timeout = 30
  stop_timeout   = "-1s"
  probe_intervall = "5s"
}

agent {}

plugin "hp" {
  type   = "monolithic"
  socket = "relative.sock"
  exec {
    command = ""
    env     = { TOKEN = "s3cr3t" }
  }
}

volume "x" {}
`
	f, parser, diags := parseConfig("agent.hcl", []byte(src))
	if f != nil {
		t.Fatalf("file returned despite errors: %+v", f)
	}
	type at struct {
		line    int
		summary string
	}
	want := []at{
		{2, "Invalid duration"},
		{3, "Invalid duration"},
		{4, "Invalid duration"},
		{5, "Unsupported argument"},
		{8, "Duplicate agent block"},
		{11, "Invalid plugin type"},
		{12, "Invalid socket path"},
		{14, "Invalid command"},
		{19, "Unsupported block type"},
	}
	var got []at
	for _, d := range diags {
		if d.Subject == nil {
			t.Fatalf("diagnostic without a range: %v", d)
		}
		got = append(got, at{d.Subject.Start.Line, d.Summary})
	}
	if len(got) != len(want) {
		t.Fatalf("diagnostics:\n%v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("diagnostic %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var buf bytes.Buffer
	if err := parser.DiagnosticWriter(&buf, 0, false).WriteDiagnostics(diags); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("rendering shows a secret:\n%s", out)
	}
	for _, s := range []string{`"soon" is not a duration`, "health_timeout must be a duration string", `An argument named "probe_intervall" is not expected in an agent block. Did you mean "probe_interval"?`, "agent.hcl:11:"} {
		if !strings.Contains(out, s) {
			t.Errorf("rendering lacks %q:\n%s", s, out)
		}
	}
}

func TestSettingsMergeAndDefaults(t *testing.T) {
	file := Settings{ProbeInterval: 2 * time.Second, HealthTimeout: time.Minute}
	flags := Settings{ProbeInterval: 100 * time.Millisecond}
	got := file.Merge(flags).withDefaults()
	want := Settings{ProbeInterval: 100 * time.Millisecond, ProbeIntervalReady: DefaultProbeIntervalReady,
		HealthTimeout: time.Minute, GCInterval: DefaultGCInterval, ReconcileInterval: DefaultReconcileInterval,
		StopTimeout: DefaultStopTimeout, BackoffMin: DefaultBackoffMin, BackoffMax: DefaultBackoffMax}
	if got != want {
		t.Fatalf("merged = %+v\nwant     %+v", got, want)
	}
	if err := (Settings{GCInterval: -time.Second}).Validate(); err == nil || err.Error() != "gc_interval must be positive, got -1s" {
		t.Fatalf("Validate = %v", err)
	}
}

// TestParseConfigNesting: a config nested 100,000 levels deep (in the agent block, which
// ParseConfig parses itself, or in a plugin block) is refused with one diagnostic at the level
// past spec.MaxNesting, not parsed into a stack overflow that kills the agent.
func TestParseConfigNesting(t *testing.T) {
	const n = 100_000
	for name, src := range map[string]string{
		"agent block":  "agent {\n  probe_interval = " + strings.Repeat("(", n) + `"5s"` + strings.Repeat(")", n) + "\n}\n",
		"plugin block": "plugin \"hp\" {\n  exec {\n    env = " + strings.Repeat("{a = ", n) + `"b"` + strings.Repeat("}", n) + "\n  }\n}\n",
		"blocks":       strings.Repeat("agent {\n", n) + strings.Repeat("}\n", n),
	} {
		t.Run(name, func(t *testing.T) {
			f, parser, diags := parseConfig("agent.hcl", []byte(src))
			if f != nil || len(diags) != 1 || diags[0].Summary != "Nesting too deep" || diags[0].Subject == nil {
				t.Fatalf("got %v, %v; want one Nesting too deep error", f, diags)
			}
			var out bytes.Buffer
			if err := parser.DiagnosticWriter(&out, 0, false).WriteDiagnostics(diags); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "on agent.hcl:") {
				t.Errorf("diagnostic does not name the file and place:\n%.300s", out.String())
			}
		})
	}
}

// TestParseConfigHCL1AndJSON: an agent config is read as a spec file is, so the HCL1 forms of
// Nomad's files (one-line blocks, commas, quoted names) and JSON give the same config as HCL2.
func TestParseConfigHCL1AndJSON(t *testing.T) {
	hcl2 := `agent {
  probe_interval = "2s"
  stop_timeout   = "20s"
}
plugin "hp" {
  type   = "monolith"
  socket = "/run/hp.sock"
  exec {
    command = "/bin/hp"
    args    = ["serve"]
  }
}
`
	want, _, diags := parseConfig("agent.hcl", []byte(hcl2))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for name, src := range map[string]string{
		"agent.hcl": `agent { "probe_interval" = "2s", stop_timeout = "20s" }
plugin "hp" { type = "monolith", socket = "/run/hp.sock", exec { command = "/bin/hp", args = ["serve"] } }
`,
		"agent.json": `{"agent": {"probe_interval": "2s", "stop_timeout": "20s"},
 "plugin": {"hp": {"type": "monolith", "socket": "/run/hp.sock", "exec": {"command": "/bin/hp", "args": ["serve"]}}}}`,
	} {
		got, _, diags := parseConfig(name, []byte(src))
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags)
		}
		if got.Settings != want.Settings || len(got.Plugins) != 1 || got.Plugins[0].ID != "hp" ||
			got.Plugins[0].ControllerEndpoint() != want.Plugins[0].ControllerEndpoint() || got.Plugins[0].Type != want.Plugins[0].Type || got.Plugins[0].Exec == nil ||
			got.Plugins[0].Exec.Command != "/bin/hp" || strings.Join(got.Plugins[0].Exec.Args, " ") != "serve" {
			t.Errorf("%s = %+v, want %+v", name, got, want)
		}
	}
}
