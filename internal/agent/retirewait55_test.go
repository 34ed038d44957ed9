package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// TestAgentStopsADeregisteredPluginOnceTheHoldOfItsPublishLockEnds: the agent stops a
// deregistered plugin's process once, under the plugin's publish lock (HoldPluginMounts). The
// lock held in that moment, by a release's undoing of a staging or by another process's brief
// hold (a reconcile pass tidying the lock files, which takes the locks of plugins no longer
// registered), read as a publish under way: the process was left running for good, nothing
// supervising it, recorded as having "0 mounts and 0 in doubt". The stop now waits for the
// lock, and stops the process once the hold ends.
func TestAgentStopsADeregisteredPluginOnceTheHoldOfItsPublishLockEnds(t *testing.T) {
	f := newFixture(t)
	stop, pid := f.agentWithLatePlugin()
	// Deregistered, the plugin's publish lock is its ID's (no socket known any more).
	held := flock.New(filepath.Join(f.dir, "locks", "plugin-late.publish.lock"))
	if ok, err := held.TryLock(); err != nil || !ok {
		t.Fatalf("hold the publish lock: %v, %v", ok, err)
	}
	if err := f.e.DeregisterPlugin(f.ctx, "late", false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the agent's retire looks while the lock is held
	if !alive(pid) {
		t.Fatalf("plugin pid %d stopped while its publish lock was held", pid)
	}
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deregistered plugin to be stopped once the hold ended", func() bool {
		_, err := os.Stat(filepath.Join(f.dir, "run", "late.pid"))
		return !alive(pid) && os.IsNotExist(err)
	})
	if logs := f.logs.String(); strings.Contains(logs, "leaving plugin running") {
		t.Errorf("the agent left the plugin running:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
