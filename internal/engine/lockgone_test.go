package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A volume's lock file deleted by hand while a claim holds it (chaos21): a second volctl makes
// a new file at the path, locks it, and both held "the" volume's lock, each driving the claim:
// the first went on from its NodeStageVolume to NodePublishVolume and its commits beside the
// second's. The holder checks, before each step (every checkpoint), that its file is still the
// one at the path; it is not, so it stops, naming the lock file and what happened, sending and
// writing nothing more, and the second, which took the lock at the path, finishes the claim.
func TestLockFileDeletedWhileHeldStopsTheHolder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.faults.Delay(csi.RPCNodeStageVolume, 300*time.Millisecond)
	h.mem.ResetCalls()
	first := h.claimWithStageInFlight("db", "web-0")

	second, lockPath := h.removeLockThenOpenAnother("db")
	// The same alloc's claim again, from another process: it takes the lock at the path and
	// drives the claim the first admitted.
	cl, err := second.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if err != nil {
		t.Fatalf("the second claimer: %v", err)
	}
	if cl.State != string(store.ClaimPublished) {
		t.Errorf("the second claimer's claim: %+v; want it published", cl)
	}
	ferr := <-first
	if ferr == nil {
		t.Error("the first claimer, whose lock file was deleted under it, went on beside the second")
	} else {
		for _, want := range []string{lockPath, "removed", `volume "db"`, "volctl reconcile"} {
			if !strings.Contains(ferr.Error(), want) {
				t.Errorf("the first claimer's error = %q; want it to say %q", ferr, want)
			}
		}
	}
	if n := h.mem.CallCount(csi.RPCNodePublishVolume); n != 1 {
		t.Errorf("NodePublishVolume sent %d times; want once, by the second claimer alone", n)
	}
	if live := h.liveClaims("db"); len(live) != 1 || live[0].State != store.ClaimPublished || live[0].NeedsReconcile {
		t.Errorf("claims = %+v; want the one, published as the second claimer left it", live)
	}
	h.release("db", "web-0")
}

// The same on the release path: a release whose lock file is deleted while its
// NodeUnpublishVolume is in flight stops at its next checkpoint, and the second volctl's release,
// on the new lock file, finishes it alone: NodeUnstageVolume and ControllerUnpublishVolume once.
func TestLockFileDeletedWhileHeldStopsTheRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	h.faults.Delay(csi.RPCNodeUnpublishVolume, 300*time.Millisecond)
	h.mem.ResetCalls()
	first := make(chan error, 1)
	go func() { _, err := h.e.Release(h.ctx, "db", "web-0"); first <- err }()
	for deadline := time.Now().Add(30 * time.Second); h.faults.Calls(csi.RPCNodeUnpublishVolume) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("NodeUnpublishVolume was never sent")
		}
	}
	second, lockPath := h.removeLockThenOpenAnother("db")
	if _, err := second.Release(h.ctx, "db", "web-0"); err != nil {
		t.Fatalf("the second release: %v", err)
	}
	if ferr := <-first; ferr == nil || !strings.Contains(ferr.Error(), lockPath) {
		t.Errorf("the first release, whose lock file was deleted under it: %v; want it stopped, naming %s", ferr, lockPath)
	}
	for _, rpc := range []string{csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		if n := h.mem.CallCount(rpc); n != 1 {
			t.Errorf("%s sent %d times; want once, by the second release alone", rpc, n)
		}
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		t.Errorf("claims = %+v; want none", live)
	}
}

// removeLockThenOpenAnother removes volume vol's lock file, as by hand, and opens a second
// engine on the state dir, as another volctl process; it returns the engine and the path.
func (h *harness) removeLockThenOpenAnother(vol string) (*Engine, string) {
	h.t.Helper()
	lockPath := filepath.Join(h.dir, lockDir, "volume-"+vol+".lock")
	if err := os.Remove(lockPath); err != nil {
		h.t.Fatal(err)
	}
	second, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { second.Close() })
	return second, lockPath
}

// A lock taken on a file that another process removed, and made anew at the path, between the
// taker's open and its flock guards nothing (the other process locks the new file): it is
// errNotAtPath, which lock and exclusive answer by taking the lock again on the file at the path.
func TestLockOnAFileNoLongerAtItsPathIsNotHeld(t *testing.T) {
	t.Parallel()
	l, err := newLocker(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fl, err := l.file("volume-db")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := fl.TryLock(); err != nil || !ok {
		t.Fatalf("lock: %v, %v", ok, err)
	}
	defer fl.Unlock()
	if _, err := lockedAtPath(fl); err != nil {
		t.Fatalf("a lock on the file at its path: %v", err)
	}
	if err := os.Remove(fl.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := lockedAtPath(fl); !errors.Is(err, errNotAtPath) {
		t.Errorf("a lock on a file removed: %v; want errNotAtPath", err)
	}
	if err := os.WriteFile(fl.Path(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lockedAtPath(fl); !errors.Is(err, errNotAtPath) {
		t.Errorf("a lock on a file removed and made anew: %v; want errNotAtPath", err)
	}
	// The lock at the path is taken on the new file, and held.
	unlock, ok, err := l.exclusive("volume-db")
	if err != nil || !ok {
		t.Fatalf("the lock at the path: %v, %v", ok, err)
	}
	defer unlock()
	if err := l.stillHeld("db"); err != nil {
		t.Errorf("stillHeld of the lock just taken: %v", err)
	}
}
