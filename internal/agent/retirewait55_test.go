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
// deregistered plugin's process once, under the plugin's publish lock (HoldPluginMountsOf). The
// lock held in that moment, by a release's undoing of a staging or by another process's brief
// hold (a reconcile pass tidying the lock files, which takes the locks of plugins no longer
// registered), read as a publish under way: the process was left running for good, nothing
// supervising it, recorded as having "0 mounts and 0 in doubt". The stop now waits for the
// lock, and stops the process once the hold ends.
func TestAgentStopsADeregisteredPluginOnceTheHoldOfItsPublishLockEnds(t *testing.T) {
	f := newFixture(t)
	stop, pid := f.agentWithLatePlugin()
	// Deregistered, the plugin's publish lock is its ID's (no socket known any more).
	held := holdLockAtPath(t, filepath.Join(f.dir, "locks", "plugin-late.publish.lock"))
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

// holdLockAtPath takes the lock file at path exclusively, as the engine's locker does: on the
// file still at its path once locked. The agent's reconcile passes tidy the lock files of
// sockets no plugin registered names (tidyNamedLocks), this one among them while the plugin is
// registered under its socket: a pass taking it between the file's making and its locking here
// made the lock fail, and one removing it after it was opened here left this holding a file
// nothing else locks (the CI flake of round 64).
func holdLockAtPath(t *testing.T, path string) *flock.Flock {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := flock.New(path)
		ok, err := l.TryLock()
		if err != nil {
			t.Fatalf("lock %s: %v", path, err)
		}
		if ok {
			fi, err1 := l.Stat()
			at, err2 := os.Stat(path)
			if err1 == nil && err2 == nil && os.SameFile(fi, at) {
				return l
			}
			_ = l.Unlock()
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out locking %s at its path", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
