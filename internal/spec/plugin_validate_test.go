package spec

import (
	"strings"
	"testing"
	"time"
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
