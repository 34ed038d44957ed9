package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The directory lock (dirs) was taken once and never checked again: its file removed by hand
// while the target index was built under it (exclusive) let a claim of another volctl lock a
// new file at the path (shared) and make its publish directory after the build's walk, finding
// no index to add its line to, and the build then moved into place an index without that
// directory: the release's look for targets the database does not record would not see a mount
// there. The build checks, before it moves the index into place, that its lock file is still
// the one at the path, and builds again under the lock at the path when it is not.
func TestDirsLockFileDeletedWhileTheTargetIndexIsBuiltKeepsTheClaimsLine(t *testing.T) {
	buildTargetIndexLosingItsLock(t, &testHookTargetIndexWalked, "while the index was built")
}

// The same with the lock file removed between the build's last check of it and the move of the
// index into place: the build moved it in, withDirs saw the lock lost and ran the build again,
// which found the index there ("built first") and kept the one it had just moved in, without the
// directory another volctl's claim made meanwhile. The build that follows its own move under a
// lost lock discards that index and builds again.
func TestDirsLockFileDeletedJustBeforeTheTargetIndexIsMovedInKeepsTheClaimsLine(t *testing.T) {
	buildTargetIndexLosingItsLock(t, &testHookTargetIndexBeforeMove, "just before the index was moved in")
}

// buildTargetIndexLosingItsLock builds the target index with hook set to remove the directory
// lock's file, the first time it runs, and make, as another volctl's claim on a new lock file
// at the path, the publish directory of volume v for alloc web-0; the index must list it.
func buildTargetIndexLosingItsLock(t *testing.T, hook *func(), when string) {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	index := filepath.Join(h.dir, targetIndexDir)
	if err := os.RemoveAll(index); err != nil {
		t.Fatal(err)
	}
	other, err := newLocker(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	target := publishPath(h.dir, "web-0", "v", false, spec.FileSystem, spec.MultiNodeMultiWriter)
	lockPath := filepath.Join(h.dir, lockDir, "dirs.lock")
	swapsGlobals(t, "a target index hook")
	runs := 0
	*hook = func() {
		if runs++; runs > 1 {
			return
		}
		if err := os.Remove(lockPath); err != nil {
			t.Error(err)
			return
		}
		// Another volctl's claim, on a new lock file at the path.
		if err := other.makeTargetParent(h.ctx, target); err != nil {
			t.Errorf("the other volctl's claim making its target's parent: %v", err)
		}
	}
	t.Cleanup(func() { *hook = func() {} })
	if err := h.e.buildTargetIndex(h.ctx); err != nil {
		t.Fatalf("building the target index: %v", err)
	}
	if runs == 0 {
		t.Fatal("the build never reached the hook")
	}
	list, err := os.ReadFile(filepath.Join(index, "v"))
	if err != nil || string(list) != "web-0\n" {
		t.Errorf("the target index's list of volume v, whose publish directory %s was made %s: %q, %v; want \"web-0\\n\"",
			filepath.Dir(target), when, list, err)
	}
}
