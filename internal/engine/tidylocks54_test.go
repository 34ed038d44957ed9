package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReconcileRemovesTheLockFilesOfVolumesItHasNothingOf: every command locks the volume ID it
// is given before it looks it up, so an ID typed wrong, or a volume deleted, left its
// locks/volume-ID.lock for good, and a state dir making and deleting a volume per CI job grew a
// file per job without end. A reconcile pass removes the lock files of the IDs the state has
// nothing of, and keeps those of a volume recorded, of a claim, and one another operation holds
// (an ID being created, say); a volume made again under a removed lock's ID is locked, claimed
// and released as before.
func TestReconcileRemovesTheLockFilesOfVolumesItHasNothingOf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"kept", "gone", "idle"} {
		h.create(volume(id))
	}
	h.claim(ClaimRequest{VolumeID: "kept", Alloc: "web"})
	if err := h.e.DeleteVolume(h.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "typo", Alloc: "web"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("claim of a volume volctl does not have = %v, want not found", err)
	}
	lockFile := func(id string) string { return filepath.Join(h.dir, lockDir, volumeLockPrefix+id+".lock") }
	for _, id := range []string{"kept", "gone", "idle", "typo"} {
		if _, err := os.Lstat(lockFile(id)); err != nil {
			t.Fatalf("before reconcile: %v; the test wants volume %q's lock file there", err, id)
		}
	}
	unlock := h.lockVolume("busy") // an operation holds the lock of an ID not recorded (yet)
	_, err := h.e.Reconcile(h.ctx)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gone", "typo"} {
		if _, err := os.Lstat(lockFile(id)); !os.IsNotExist(err) {
			t.Errorf("lock file of %q, which the state has nothing of, after reconcile: %v; want it removed", id, err)
		}
	}
	for _, id := range []string{"kept", "idle", "busy"} {
		if _, err := os.Lstat(lockFile(id)); err != nil {
			t.Errorf("lock file of %q after reconcile: %v; want it kept (recorded, or held)", id, err)
		}
	}
	for _, name := range []string{"dirs.lock"} {
		if _, err := os.Lstat(filepath.Join(h.dir, lockDir, name)); err != nil {
			t.Errorf("%s after reconcile: %v; want it kept (not a volume's)", name, err)
		}
	}
	h.create(volume("gone"))
	cl := h.claim(ClaimRequest{VolumeID: "gone", Alloc: "web"})
	if _, err := os.Lstat(lockFile("gone")); err != nil {
		t.Errorf("lock file of %q once it is made again and claimed: %v", "gone", err)
	}
	h.release("gone", "web")
	if cl.TargetPath == "" {
		t.Errorf("claim of the volume made again = %+v, want a target", cl)
	}
}

// TestLockFilesTidiedBesideAVolumeMadeAndDeletedAgainAndAgain: reconcile passes run while
// another volctl creates, claims, releases and deletes one volume over and over, so that the
// passes find its lock file with nothing of it recorded between each delete and the next
// create, and while each operation holds it. Each operation holds the lock it took to its end:
// none is stopped as having lost its lock (a file removed from under its holder), and none
// fails.
func TestLockFilesTidiedBesideAVolumeMadeAndDeletedAgainAndAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := h.otherProcess()
	h.reconcilingBeside(func() {
		for i := range 25 {
			if _, err := other.CreateVolume(h.ctx, volume("churn")); err != nil {
				t.Fatalf("round %d: create: %v", i, err)
			}
			if _, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "churn", Alloc: "job"}); err != nil {
				t.Fatalf("round %d: claim: %v", i, err)
			}
			if _, err := other.Release(h.ctx, "churn", "job"); err != nil {
				t.Fatalf("round %d: release: %v", i, err)
			}
			if err := other.DeleteVolume(h.ctx, "churn"); err != nil {
				t.Fatalf("round %d: delete: %v", i, err)
			}
		}
	})
}

// reconcilingBeside runs ops while reconcile passes of h's engine run in a loop beside them,
// each of which must succeed, and fails the test if no pass ran before ops ended.
func (h *harness) reconcilingBeside(ops func()) {
	h.t.Helper()
	stop := make(chan struct{})
	passes := make(chan int, 1)
	go func() {
		n := 0
		defer func() { passes <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				h.t.Errorf("reconcile pass %d: %v", n, err)
				return
			}
			n++
		}
	}()
	defer func() {
		close(stop)
		if n := <-passes; n == 0 {
			h.t.Error("no reconcile pass ran beside the operations")
		}
	}()
	ops()
}
