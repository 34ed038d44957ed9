package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestLongTimeoutAdviceFitsThePlugin: the advice to raise a plugin's timeout (the pasted
// command of TestTimedOutRPCSaysHowToRaiseTheTimeout) gives back each declaration as it is but
// for the timeout: a split plugin's two sockets, a half's type and socket. A plugin the agent
// starts is sent to its plugin block instead: registered again by flags, it would lose its
// exec block. And a timeout at the most a plugin's can be is not raised past it.
func TestLongTimeoutAdviceFitsThePlugin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		p      spec.Plugin
		long   time.Duration
		want   string
		absent string
	}{
		{"monolith", spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/hp.sock"}, 2 * time.Minute,
			"`volctl plugin register --id hp --socket /run/hp.sock --timeout 4m0s`", ""},
		{"split monolith", spec.Plugin{ID: "ebs", Type: spec.PluginMonolith, ControllerSocket: "/c.sock", NodeSocket: "/n.sock"}, time.Minute,
			"`volctl plugin register --id ebs --controller-socket /c.sock --node-socket /n.sock --timeout 2m0s`", ""},
		{"controller half", spec.Plugin{ID: "ebs", Type: spec.PluginController, ControllerSocket: "/c.sock"}, time.Minute,
			"`volctl plugin register --id ebs --type controller --socket /c.sock --timeout 2m0s`", ""},
		{"node half", spec.Plugin{ID: "-ebs", Type: spec.PluginNode, Socket: "/n sock"}, time.Minute,
			"`volctl plugin register --id=-ebs --type node --socket '/n sock' --timeout 2m0s`", ""},
		{"supervised", spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/hp.sock", Exec: &spec.Exec{Command: "/bin/hp"}}, 2 * time.Minute,
			"raise the timeout (2m0s) in its plugin block, to 4m0s say, and register that file again (`volctl plugin register FILE`", "--id"},
		{"near the most", spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/s"}, 20 * time.Hour, "--timeout 24h0m0s`", ""},
		{"at the most", spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/s"}, 24 * time.Hour,
			"its timeout, 24h0m0s, is the most a plugin's timeout can be", "volctl plugin register"},
	} {
		got := longTimeoutAdvice(store.PluginFromSpec(tt.p), tt.long)
		if !strings.Contains(got, tt.want) || tt.absent != "" && strings.Contains(got, tt.absent) {
			t.Errorf("%s: advice %q; want it to say %q (and not %q)", tt.name, got, tt.want, tt.absent)
		}
	}
}
