package agent

import (
	"path/filepath"
	"testing"
)

// An agent adopting a plugin's process left running by an earlier agent, whose declaration was
// since registered again on another socket (allowed once the plugin held no mounts), replaces
// the outdated process (replaceOutdated) under the publish lock of the plugin as the store has
// it now (runner.mountsHeld: HoldPluginMountsOf), the NEW socket's, which nobody holds. A claim
// publishing through the old socket, which the adopted process serves, holds the old socket's
// publish lock: the agent must not stop the process under it (docs/agent.md: never a plugin
// under a publish under way), as its stop of a re-declared plugin no longer does
// (HoldPluginMountsServing, TestSocketMoveDoesNotStopThePluginUnderAPublishOnItsOldSocket).
// The pid file now records the sockets the process serves (process.served). Found by helper
// review65.
func TestAdoptedOutdatedPluginIsNotStoppedUnderAPublishOnItsOldSocket(t *testing.T) {
	f := newFixture(t)
	sp, pid := f.leftRunningUnderAClaim()
	// The claim released through the process still serving the old socket: no mounts now.
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	// A claim command publishing through hp on the socket the process serves: it holds that
	// socket's publish lock (as a publish does, shared; here exclusive, as the other tests do).
	cmd := f.openEngine()
	m, release, err := cmd.HoldPluginMountsOf(f.ctx, "hp", nil)
	if err != nil || m.Publishing || m.Any() {
		t.Fatalf("holding hp's publish lock as a publish does: %+v, %v", m, err)
	}
	defer release()
	// Meanwhile the plugin is registered again on another socket (no mounts: let through).
	moved := sp
	moved.Socket = filepath.Join(f.dir, "sockets", "hp-new.sock")
	if _, err := f.e.RegisterPlugin(f.ctx, moved); err != nil {
		t.Fatalf("registering hp on another socket with no mounts: %v", err)
	}
	stop := f.startAgent(testSettings)
	defer stop()
	stoppedOncePublished(t, f, release, pid)
}
