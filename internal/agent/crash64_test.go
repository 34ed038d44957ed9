package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// docs/agent.md: the start-up restore "runs once every plugin is healthy or has used up its
// health timeout", and a plugin whose Probe says not ready is not healthy. Before, a plugin
// answering at all (ready=false) let the start-up reconcile run and READY=1 go to systemd at
// once: restores went to a plugin still starting. The agent waits for it up to the health
// timeout. Found by helper review64.
func TestNotReadyPluginDoesNotSettleTheStartupRestore(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("nr", "notready"))
	s := testSettings
	s.HealthTimeout = time.Hour
	a, stop := f.startAgentWith(func(c *Config) { c.Settings = s })
	defer stop()
	waitFor(t, "the plugin probed not ready", func() bool {
		return f.plugin("nr").Health() == engine.PluginNotReady
	})
	// Give the housekeeping loop time to run the start-up reconcile if it thinks it may.
	time.Sleep(2 * time.Second)
	if a.ready.Load() {
		t.Fatalf("the agent reported ready (start-up restore run, READY=1) while plugin %q says it is not ready and its health timeout (%s) has not passed; log:\n%s",
			"nr", s.HealthTimeout, f.logs)
	}
}

// docs/agent.md: the agent never stops a plugin that has mounts or mounts in doubt, and what a
// plugin started outside its group is stopped only while the plugin has no mounts (such a
// process may serve them: a FUSE daemon). Before, a plugin whose process crashed under mounts,
// leaving the helper that serves them in its process group (forked without setsid, the common
// case), had that helper killed at once (the exit path stopped the group without counting the
// mounts), taking the mounts from the allocs using them, while the same helper in a session of
// its own was spared. Found by helper review64.
func TestHelperInACrashedPluginsGroupIsKeptUnderMounts(t *testing.T) {
	f, stop, helper := groupHelperPlugin(t)
	defer stop()
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "fuse", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	f.claimAsCommand()
	if m, err := f.e.PluginMounts(f.ctx, "fuse"); err != nil || m.Mounts == 0 {
		t.Fatalf("plugin fuse's mounts after the claim: %+v, %v; want some", m, err)
	}
	first := f.pid("fuse")
	if err := os.WriteFile(filepath.Join(f.dir, "hostpath-fuse", "crash"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to crash and be started again", func() bool {
		p := f.pid("fuse")
		return len(f.events("plugin-exit")) > 0 && p != 0 && p != first && alive(p)
	})
	if !alive(helper) {
		t.Fatalf("the helper the crashed plugin left in its process group (pid %d), which may serve its mounts, was stopped while the plugin has mounts; log:\n%s", helper, f.logs)
	}
}

// groupHelperPlugin is a fixture whose agent runs plugin fuse ("mounts-with-group-helper": it
// mounts for real, and its helper stays in its process group), healthy: the fixture, the
// agent's stop, and the helper's pid.
func groupHelperPlugin(t *testing.T) (*fixture, func(), int) {
	t.Helper()
	f := newFixture(t)
	f.mountsForReal()
	f.register(f.execPlugin("fuse", "mounts-with-group-helper"))
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("fuse").Healthy })
	return f, func() { _ = stop() }, f.childPid("fuse")
}
