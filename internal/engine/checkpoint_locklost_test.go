package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A claim's checkpoint checked its volume's lock just before its transaction, not inside it:
// a commit that waited for the database (another writer of this process, or another volctl
// holding SQLite's write lock) while the lock file was removed and a second volctl took the
// lock on a new file wrote the claim's next state anyway, under the second volctl's lock. The
// check is made inside the transaction (locker.holding): the commit writes nothing, and the
// claim stops naming the lock file.
func TestLockFileDeletedWhileACheckpointWaitsForTheDatabaseWritesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	first, before, gate := h.claimWithStageHeld(csitest.Fault{Times: 1})
	release := h.holdWriteConnection()
	defer release()
	close(gate)
	// The claim's commit of NodeStageVolume's answer has checked the lock and waits for the
	// database.
	lockPath, ferr := h.loseLockWhileWaiting("db", "engine.(*checkpoint).commit", release, first)
	if ferr == nil || !strings.Contains(ferr.Error(), lockPath) {
		t.Errorf("the claim whose lock file was deleted while its commit waited: %v; want it stopped, naming %s", ferr, lockPath)
	}
	after := h.liveClaims("db")
	if len(after) != 1 || after[0].State != before.State {
		t.Errorf("claims after = %+v; want the one still %s: nothing written once the second volctl held the lock", after, before.State)
	}
	if n := h.mem.CallCount(csi.RPCNodePublishVolume); n != 0 {
		t.Errorf("NodePublishVolume sent %d times; want none", n)
	}
}

// claimWithStageHeld starts a claim of volume db for alloc web-0 whose NodeStageVolume is held
// at a gate, then does what fault says (Gate set here); it returns the claim's result, the
// claim as recorded while NodeStageVolume is held, and the gate to close.
func (h *harness) claimWithStageHeld(fault csitest.Fault) (done <-chan error, before store.Claim, gate chan struct{}) {
	h.t.Helper()
	gate = make(chan struct{})
	fault.Gate = gate
	h.faults.Inject(csi.RPCNodeStageVolume, fault)
	first := make(chan error, 1)
	go func() { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); first <- err }()
	h.waitInFlight(gate, first)
	claims := h.liveClaims("db")
	if len(claims) != 1 {
		close(gate)
		h.t.Fatalf("claims while NodeStageVolume is in flight: %+v; want one", claims)
	}
	return first, claims[0], gate
}

// holdWriteConnection takes the engine's database write connection, as a long write of this
// process would, until the returned release (safe to call twice).
func (h *harness) holdWriteConnection() (release func()) {
	h.t.Helper()
	held, done, ended := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		ended <- h.e.store.Update(h.ctx, func(*store.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-ended:
		h.t.Fatalf("holding the write connection: %v", err)
	}
	var once bool
	return func() {
		if once {
			return
		}
		once = true
		close(done)
		if err := <-ended; err != nil {
			h.t.Errorf("the held write transaction: %v", err)
		}
	}
}

// waitForGoroutineIn waits until a goroutine's stack holds every one of frames (function names,
// as runtime.Stack prints them), failing the test after 30 s.
func waitForGoroutineIn(t *testing.T, frames ...string) {
	t.Helper()
	waitForGoroutineBlockedIn(t, "", frames...)
}

// waitForGoroutineBlockedIn is waitForGoroutineIn for a goroutine blocked (not running, nor
// runnable, nor in a system call) with blockedIn (a function name) its innermost frame: one
// passing through pool.get on its way (a read opening a connection, slow on a loaded machine)
// was taken for one waiting there, and the test went on before the operation held its lock,
// which it then waited for behind the test's second volctl for good. "" is any goroutine.
func waitForGoroutineBlockedIn(t *testing.T, blockedIn string, frames ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			all := true
			for _, f := range frames {
				all = all && strings.Contains(g, f+"(")
			}
			if blockedIn != "" {
				header, first, _ := strings.Cut(g, "\n")
				all = all && !strings.Contains(header, "[running") && !strings.Contains(header, "[runnable") &&
					!strings.Contains(header, "[syscall") && strings.HasPrefix(strings.TrimPrefix(first, "github.com/volctl/volctl/internal/"), blockedIn+"(")
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine reached %s", strings.Join(frames, " in "))
		}
	}
}

// The same for a claim's failure, which a claim left for reconcile records in a transaction of
// its own (recordFailure): it checked the lock only by its cause (errLockLost). A failure
// recorded once the lock file was removed, and the lock taken on a new file by a second
// volctl, while the record waited for the database, wrote the first's copy of the claim over
// the row the second drives, with its failure, its attempts and the event. Checked inside the
// transaction, nothing is written.
func TestLockFileDeletedWhileAClaimsFailureWaitsForTheDatabaseWritesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	first, before, gate := h.claimWithStageHeld(csitest.Fault{Code: codes.Unavailable})
	events := len(h.eventsSaying("claim", "left"))
	release := h.holdWriteConnection()
	defer release()
	close(gate)
	if _, err := h.loseLockWhileWaiting("db", "engine.(*Engine).recordFailure", release, first); err == nil {
		t.Error("the claim whose NodeStageVolume failed succeeded")
	}
	after := h.liveClaims("db")
	if len(after) != 1 || after[0].NeedsReconcile != before.NeedsReconcile || after[0].Attempts != before.Attempts || after[0].LastError != before.LastError {
		t.Errorf("claim after = %+v; want it as it was before the failure (%+v): nothing written once the second volctl held the lock", after, before)
	}
	if n := len(h.eventsSaying("claim", "left")); n != events {
		t.Errorf("%d events recorded for volume db after the lock was lost; want none", n-events)
	}
}

// The same for a release's first checkpoint, which marks the claim releasing in the transaction
// that reads it (releaseStored) and checked nothing: a release whose lock file was removed,
// and the lock taken on a new file by a second volctl, while it waited for the database marked
// the claim releasing and unpublishing under the other's lock (then stopped at its next
// checkpoint), leaving the mark on a claim another volctl drives. Checked inside the
// transaction, nothing is written and the release stops, naming the lock file.
func TestLockFileDeletedWhileAReleaseWaitsForTheDatabaseMarksNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	lockPath, err := h.lockLostWhileWaitingForTheDatabase("db", "engine.(*Engine).releaseStored", func() error {
		_, err := h.e.Release(h.ctx, "db", "web-0")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), lockPath) {
		t.Errorf("the release whose lock file was deleted while it waited: %v; want it stopped, naming %s", err, lockPath)
	}
	if live := h.liveClaims("db"); len(live) != 1 || live[0].Releasing || live[0].State != store.ClaimPublished {
		t.Errorf("claims after = %+v; want the one published, not marked releasing under the second volctl's lock", live)
	}
	if n := h.mem.CallCount(csi.RPCNodeUnpublishVolume); n != 0 {
		t.Errorf("NodeUnpublishVolume sent %d times; want none", n)
	}
}

// The same for `volume detach`, whose first transaction marks every claim of the volume
// releasing: it marked them under the second volctl's lock, then stopped at each claim's next
// checkpoint, leaving them marked for reconcile to release.
func TestLockFileDeletedWhileADetachWaitsForTheDatabaseMarksNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-1"})
	lockPath, err := h.lockLostWhileWaitingForTheDatabase("db", "engine.(*Engine).detachStored", func() error {
		_, err := h.e.Detach(h.ctx, "db", false)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), lockPath) {
		t.Errorf("the detach whose lock file was deleted while it waited: %v; want it stopped, naming %s", err, lockPath)
	}
	for _, c := range h.liveClaims("db") {
		if c.Releasing || c.State != store.ClaimPublished {
			t.Errorf("claim of %s after = %+v; want it published, not marked releasing under the second volctl's lock", c.Alloc, c)
		}
	}
	if n := h.mem.CallCount(csi.RPCNodeUnpublishVolume); n != 0 {
		t.Errorf("NodeUnpublishVolume sent %d times; want none", n)
	}
}

// lockLostWhileWaitingForTheDatabase runs op, an operation on volume vol, while this process's
// write connection is held, and loses its lock once it waits for the connection in frame
// (loseLockWhileWaiting).
func (h *harness) lockLostWhileWaitingForTheDatabase(vol, frame string, op func() error) (lockPath string, err error) {
	h.t.Helper()
	release := h.holdWriteConnection()
	defer release()
	done := make(chan error, 1)
	go func() { done <- op() }()
	return h.loseLockWhileWaiting(vol, frame, release, done)
}

// loseLockWhileWaiting waits until an operation on volume vol, running and reporting to done,
// waits for the write connection held until release in frame (a function name, as
// waitForGoroutineIn takes it); then removes the volume's lock file and takes the lock on a new
// one, as a second volctl, and lets the operation go on. It returns the lock file's path and the
// operation's error; the second volctl's lock is held until the test ends.
func (h *harness) loseLockWhileWaiting(vol, frame string, release func(), done <-chan error) (lockPath string, err error) {
	h.t.Helper()
	waitForGoroutineBlockedIn(h.t, "store.(*pool).get", frame)
	other, err := newLocker(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	lockPath = filepath.Join(h.dir, lockDir, "volume-"+vol+".lock")
	if err := os.Remove(lockPath); err != nil {
		h.t.Fatal(err)
	}
	unlock, err := other.volume(h.ctx, vol)
	if err != nil {
		h.t.Fatalf("the second volctl's lock: %v", err)
	}
	h.t.Cleanup(unlock)
	release()
	return lockPath, <-done
}
