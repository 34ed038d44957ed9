package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestDeclaredPluginWhoseSocketAppearsLaterIsRegistered: the agent config declares a plugin
// without an exec block (another supervisor runs it) whose socket is not there yet when the
// agent starts, as when both are started at boot. Before, the agent tried to register it once,
// at start, logged the failure, and never again: the plugin stayed unregistered, unprobed and
// unusable until the agent restarted. Now every sync pass tries again until the registration
// succeeds, and the failure is logged once, not on every pass.
func TestDeclaredPluginWhoseSocketAppearsLaterIsRegistered(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "late.sock")
	sp := spec.Plugin{ID: "late", Type: spec.PluginMonolith, Socket: socket}
	stop := f.startAgent(testSettings, sp)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the agent to try the declared plugin", func() bool { return strings.Contains(f.logs.String(), "registering a declared plugin") })
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	waitFor(t, "the declared plugin to be registered and probed healthy once its socket answers", func() bool {
		ps, err := f.e.Plugins(f.ctx)
		return err == nil && len(ps) == 1 && ps[0].ID == "late" && ps[0].Healthy
	})
	if n := strings.Count(f.logs.String(), "registering a declared plugin"); n != 1 {
		t.Errorf("the registration failure was logged %d times, want once:\n%s", n, f.logs)
	}
}
