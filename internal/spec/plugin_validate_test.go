package spec

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

func TestPluginValidate(t *testing.T) {
	long := "/" + strings.Repeat("s", MaxSocketPath)
	tests := []struct {
		name string
		p    Plugin
		want []string // substrings of the error, each required; none means valid
	}{
		{"monolith", Plugin{ID: "hp", Type: PluginMonolith, Socket: "/run/hp.sock"}, nil},
		{"monolith split", Plugin{ID: "hp", Type: PluginMonolith, ControllerSocket: "/run/c.sock", NodeSocket: "/run/n.sock"}, nil},
		{"controller", Plugin{ID: "c", Type: PluginController, ControllerSocket: "/run/c.sock", Timeout: time.Minute}, nil},
		{"node via socket", Plugin{ID: "n", Type: PluginNode, Socket: "/run/n.sock"}, nil},
		{"bad id", Plugin{ID: "../x", Type: PluginMonolith, Socket: "/run/hp.sock"}, []string{`plugin ID "../x"`}},
		{"bad type", Plugin{ID: "hp", Type: "both", Socket: "/run/hp.sock"}, []string{`plugin "hp": type "both" is not a plugin type; valid types: monolith, controller, node`}},
		{"no socket", Plugin{ID: "hp", Type: PluginMonolith}, []string{"a socket is required"}},
		{"half split", Plugin{ID: "hp", Type: PluginMonolith, ControllerSocket: "/run/c.sock"}, []string{"needs both controller_socket and node_socket"}},
		{"socket and split", Plugin{ID: "hp", Type: PluginMonolith, Socket: "/run/a.sock", NodeSocket: "/run/n.sock"}, []string{"cannot be combined"}},
		{"controller with node socket", Plugin{ID: "c", Type: PluginController, ControllerSocket: "/run/c.sock", NodeSocket: "/run/n.sock"}, []string{"node_socket is not used by a controller plugin"}},
		{"node with nothing", Plugin{ID: "n", Type: PluginNode}, []string{"needs its node socket"}},
		{"relative", Plugin{ID: "hp", Type: PluginMonolith, Socket: "hp.sock"}, []string{`socket "hp.sock" must be an absolute path`}},
		{"too long", Plugin{ID: "hp", Type: PluginMonolith, Socket: long}, []string{"at most 107 bytes"}},
		{"negative timeout", Plugin{ID: "hp", Type: PluginMonolith, Socket: "/run/hp.sock", Timeout: -time.Second}, []string{"timeout must be more than zero"}},
		{"every problem at once", Plugin{ID: "-x", Type: PluginMonolith, Socket: "rel", Timeout: -1}, []string{`must not start with "-"`, "absolute path", "timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error with %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestExecCommandIsAbsoluteOrAName: an exec block's command that is a relative path
// ("./bin/plugin", "bin/plugin") was taken without a word: the agent looks it up from its own
// working directory, "/" under systemd, so a config that ran from a shell in its directory
// failed under systemd, the agent retrying the start for ever. It is warned of at its line and
// column, in a config and in a plugin spec alike, saying what to write: not refused, as a unit
// that sets WorkingDirectory= runs it as it always did (review26d: refusing it stopped such an
// agent from starting after an upgrade). A command with a blank at an end or a control
// character is refused; an absolute path and a name alone (looked up in PATH) are taken, a
// blank inside too.
func TestExecCommandIsAbsoluteOrAName(t *testing.T) {
	src := func(command string) []byte {
		return []byte("plugin \"p\" {\n  type   = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = " + strconv.Quote(command) + "\n  }\n}\n")
	}
	for command, want := range map[string]string{
		"./bin/plugin": `command "./bin/plugin" is a relative path, which the agent looks up from its own working directory ("/" under systemd, unless its unit sets WorkingDirectory=), not this file's: write the absolute path`,
		"bin/plugin":   `command "bin/plugin" is a relative path`,
		"../plugin":    `command "../plugin" is a relative path`,
	} {
		for kind, parse := range map[string]func([]byte) hcl.Diagnostics{
			"plugin spec":  func(b []byte) hcl.Diagnostics { _, d := NewParser().ParsePlugins("p.hcl", b); return d },
			"agent config": func(b []byte) hcl.Diagnostics { _, d := NewParser().ParseAgentConfig("agent.hcl", b); return d },
		} {
			diags := parse(src(command))
			if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Relative command" ||
				!strings.Contains(diags[0].Detail, want) || diags[0].Subject == nil || diags[0].Subject.Start.Line != 5 || diags[0].Subject.Start.Column != 15 {
				t.Errorf("%s, command %q: %v; want it taken with one warning, \"Relative command\" at 5:15 saying %q", kind, command, diags, want)
			}
		}
		p := Plugin{ID: "p", Type: PluginMonolith, Socket: "/run/p.sock", Exec: &Exec{Command: command}}
		if err := p.Validate(); err != nil {
			t.Errorf("Validate, command %q: %v; want it taken (a unit's WorkingDirectory= makes it run)", command, err)
		}
	}
	for command, want := range map[string]string{
		" /usr/bin/plugin":  `command " /usr/bin/plugin" begins with a blank: write the program's path without it`,
		"/usr/bin/plugin\n": `command "/usr/bin/plugin\n" holds a control character`,
	} {
		for kind, parse := range map[string]func([]byte) hcl.Diagnostics{
			"plugin spec":  func(b []byte) hcl.Diagnostics { _, d := NewParser().ParsePlugins("p.hcl", b); return d },
			"agent config": func(b []byte) hcl.Diagnostics { _, d := NewParser().ParseAgentConfig("agent.hcl", b); return d },
		} {
			diags := parse(src(command))
			if !diags.HasErrors() || diags[0].Summary != "Invalid command" || !strings.Contains(diags[0].Detail, want) ||
				diags[0].Subject == nil || diags[0].Subject.Start.Line != 5 || diags[0].Subject.Start.Column != 15 {
				t.Errorf("%s, command %q: %v; want \"Invalid command\" at 5:15 saying %q", kind, command, diags, want)
			}
		}
		p := Plugin{ID: "p", Type: PluginMonolith, Socket: "/run/p.sock", Exec: &Exec{Command: command}}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate, command %q: %v; want it refused saying %q", command, err, want)
		}
	}
	for _, command := range []string{"/usr/local/bin/volctl", "volctl", "docker", "/opt/my plugin/bin/p"} {
		if _, diags := NewParser().ParsePlugins("p.hcl", src(command)); diags.HasErrors() {
			t.Errorf("command %q: %v; want it taken", command, diags)
		}
	}
}
