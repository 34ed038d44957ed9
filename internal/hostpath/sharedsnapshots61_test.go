package hostpath_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath"
)

// Two processes serve one root (volctl's plugin and Nomad's), and each is asked for snapshot
// "snap" of the same volume while the first one's copy runs: the second finds no record (the
// first records after its copy) and copies too. The one recording second answers with the
// first's snapshot and removes its own copy, so the root holds one snapshot under the name.
// Before, each recorded its own: two snapshots named "snap", each process answering its own,
// a delete by name removing one and the other left on the root for good. Found by helper
// review61.
func TestSnapshotMadeByBothProcessesAtOnceIsRecordedOnce(t *testing.T) {
	root, local, other, v := dataOnOneRoot(t)
	reached := make(chan struct{}, 4)
	release := make(chan struct{})
	var copies atomic.Int32
	hostpath.AfterEachCopiedFile(t, func(rel string) {
		if rel != "f" || copies.Add(1) != 1 {
			return // only the first process's copy is held
		}
		reached <- struct{}{}
		<-release
	})
	t.Cleanup(func() { letGo(release) })

	first := snapshotOf(local, v)
	select {
	case <-reached:
	case r := <-first:
		t.Fatalf("the first CreateSnapshot ended before its copy was held: %+v", r)
	case <-time.After(10 * time.Second):
		t.Fatal("the first CreateSnapshot's copy never started")
	}
	b := <-snapshotOf(other, v) // copies while the first's copy is held, and records
	mustOK(t, b.err)
	letGo(release)
	a := <-first
	mustOK(t, a.err)
	if copies.Load() < 2 {
		t.Fatalf("the second process made no copy of its own (%d copies): the race is not what this tests", copies.Load())
	}
	named := snapshotsNamed(t, root, "snap")
	if a.id != b.id || len(named) != 1 {
		t.Fatalf("CreateSnapshot %q of one volume through both processes at once answered %s and %s; the root holds %d snapshots named %q: %v",
			"snap", a.id, b.id, len(named), "snap", named)
	}
	dirs, err := os.ReadDir(filepath.Join(root, "snapshots"))
	mustOK(t, err)
	if len(dirs) != 1 || dirs[0].Name() != b.id {
		t.Errorf("the root's snapshot directories are %v, want only %s: the copy recorded second stays on the root", dirs, b.id)
	}
}
