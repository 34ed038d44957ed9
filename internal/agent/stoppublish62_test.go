package agent

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// docs/agent.md: the agent never stops a plugin under "a publish under way (a claim or restore,
// in any process, holds the plugin's publish lock, <state>/locks/publish-<hash>.lock, named by
// the plugin's node socket ...); the agent counts and stops under that lock". A `plugin
// register` that moves an exec plugin to another socket is let through while it has no mounts
// (refuseSocketMoveUnderMounts counts mounts only), and the agent then stops the old process
// (sync: its exec block changed) under the publish lock of the plugin as the store has it now,
// the NEW socket's, which nobody holds: a claim publishing through the old socket at that moment
// (its NodePublishVolume or ControllerPublishVolume in flight, holding the old socket's lock)
// had the plugin stopped under it at once, instead of the stop waiting for it (up to
// stop_timeout) or leaving the process running. Now the stop holds the publish lock of the
// socket the process serves too (HoldPluginMountsServing), and stops it once the publish ends.
// Found by helper review62.
func TestSocketMoveDoesNotStopThePluginUnderAPublishOnItsOldSocket(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	stop := f.startAgent(testSettings) // stop_timeout 5s
	defer stop()
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	pid := f.pid("hp")

	// A claim command publishing through hp, on the socket it runs on.
	cmd := f.openEngine()
	m, release, err := cmd.HoldPluginMountsOf(f.ctx, "hp", nil)
	if err != nil || m.Publishing || m.Any() {
		t.Fatalf("holding hp's publish lock as a publish does: %+v, %v", m, err)
	}

	// Meanwhile the plugin is registered again on another socket.
	moved := sp
	moved.Socket = filepath.Join(f.dir, "sockets", "hp-new.sock")
	if _, err := f.e.RegisterPlugin(f.ctx, moved); err != nil {
		t.Fatalf("registering hp on another socket with no mounts: %v", err)
	}
	stoppedOncePublished(t, f, release, pid)
}

// stoppedOncePublished checks that the agent leaves the plugin's process pid running for 2 s
// while the publish holds its lock (it picks a change up within a probe interval, 50ms; its
// stop_timeout is 5s), then ends the publish (release: its lock) and waits for the agent to
// stop the process, which it waited for.
func stoppedOncePublished(t *testing.T, f *fixture, release func(), pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			t.Fatalf("the agent stopped plugin hp (pid %d) while a publish through its socket held the publish lock; log:\n%s", pid, f.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	release()
	waitFor(t, "the agent to stop the plugin once the publish ended", func() bool { return !alive(pid) })
}

// The same of `plugin deregister --force` (its volumes kept) while a claim publishes through
// the plugin: the agent's stop of the deregistered plugin's process takes the publish lock of
// the plugin ID alone (locks/plugin-hp.publish.lock, no socket known any more), which no publish
// takes, not the socket's the claim holds, and stopped the process under the publish at once.
// Found by helper review62.
func TestForcedDeregisterDoesNotStopThePluginUnderAPublish(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	stop := f.startAgent(testSettings)
	defer stop()
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	pid := f.pid("hp")
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "hp", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	cmd := f.openEngine()
	m, release, err := cmd.HoldPluginMountsOf(f.ctx, "hp", nil)
	if err != nil || m.Publishing || m.Any() {
		t.Fatalf("holding hp's publish lock as a publish does: %+v, %v", m, err)
	}
	if err := f.e.DeregisterPlugin(f.ctx, "hp", true); err != nil {
		t.Fatal(err)
	}
	stoppedOncePublished(t, f, release, pid)
}
