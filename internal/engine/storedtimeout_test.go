package engine

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestStoredPluginTimeoutOutsideItsBoundsIsClamped: a plugin registered by an older volctl,
// which took any timeout more than zero (timeout = "1ns", plugin register --timeout 1ns), keeps
// it in the state, where no check looks again: every create, publish and stage of its volumes
// failed at once, blaming the plugin. The timeout is clamped to its bounds when used (1s to
// 24h, spec.CheckPluginTimeout), with a warning that names the plugin, the stored timeout and
// how to set another; a half registered beside it joins with the clamped one.
func TestStoredPluginTimeoutOutsideItsBoundsIsClamped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"mem", "half"} {
		if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
			p := store.Plugin{ID: id, Type: spec.PluginMonolith, Socket: h.socket, Timeout: time.Nanosecond}
			if id == "half" {
				p.Type, p.Socket, p.ControllerSocket = spec.PluginController, "", h.socket
			}
			return tx.Plugins().Put(&p)
		}); err != nil {
			t.Fatal(err)
		}
	}
	got := warningsOfACreate(t, h)
	for _, want := range []string{`plugin \"mem\": its timeout 1ns`, "less than the least it may be, 1s", "1s is used", "`volctl plugin register --id mem --socket " + h.socket + " --timeout 1s`"} {
		if !strings.Contains(got, want) {
			t.Errorf("log = %q, want it to say %q", got, want)
		}
	}
	node, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "half", Type: spec.PluginNode, NodeSocket: node}); err != nil {
		t.Fatalf("register the node half of a controller stored with timeout 1ns: %v", err)
	}
	p, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get("half") })
	if err != nil || p.Timeout != time.Second {
		t.Fatalf("joined plugin's timeout = %v, %v; want 1s, the stored 1ns clamped", p.Timeout, err)
	}
}

// A plugin the agent starts (an exec block), stored by an older volctl with a timeout out of
// bounds: the warning sends it to its plugin block, never to a register by flags, which would
// replace its declaration and drop the exec block (review32d).
func TestStoredTimeoutOfAPluginTheAgentStartsIsRaisedInItsBlock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		p := store.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket, Timeout: time.Nanosecond,
			Exec: &spec.Exec{Command: "/usr/local/bin/mem-csi", Env: spec.Secrets{"TOKEN": "t0ps3cret"}}}
		return tx.Plugins().Put(&p)
	}); err != nil {
		t.Fatal(err)
	}
	got := warningsOfACreate(t, h)
	if !strings.Contains(got, "1s is used") || !strings.Contains(got, "in its plugin block's timeout, then register that file again") {
		t.Errorf("log = %q, want the clamp warning sending it to its plugin block", got)
	}
	if strings.Contains(got, "volctl plugin register --id") || strings.Contains(got, "t0ps3cret") {
		t.Errorf("log = %q: advises registering a plugin the agent starts by flags (which drops its exec block), or shows its env", got)
	}
}

// warningsOfACreate opens h's engine again with a logger of warnings, creates a volume through
// the plugins stored (out of bounds timeouts), and returns what was logged.
func warningsOfACreate(t *testing.T, h *harness) string {
	t.Helper()
	var logs strings.Builder
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err != nil {
		t.Fatalf("create through a plugin stored with timeout 1ns: %v", err)
	}
	return logs.String()
}
