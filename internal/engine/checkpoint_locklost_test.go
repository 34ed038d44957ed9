package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
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
	h.faults.Delay(csi.RPCNodeStageVolume, 300*time.Millisecond)
	first := h.claimWithStageInFlight("db", "web-0")
	before := h.liveClaims("db")
	if len(before) != 1 {
		t.Fatalf("claims while NodeStageVolume is in flight: %+v; want one", before)
	}
	release := h.holdWriteConnection()
	defer release()
	// The claim's commit of NodeStageVolume's answer has checked the lock and waits for the
	// database.
	waitForGoroutineIn(t, "engine.(*checkpoint).commit", "store.(*pool).get")

	other, err := newLocker(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(h.dir, lockDir, "volume-db.lock")
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	unlock, err := other.volume(h.ctx, "db")
	if err != nil {
		t.Fatalf("the second volctl's lock: %v", err)
	}
	defer unlock()
	release()

	ferr := <-first
	if ferr == nil || !strings.Contains(ferr.Error(), lockPath) {
		t.Errorf("the claim whose lock file was deleted while its commit waited: %v; want it stopped, naming %s", ferr, lockPath)
	}
	after := h.liveClaims("db")
	if len(after) != 1 || after[0].State != before[0].State {
		t.Errorf("claims after = %+v; want the one still %s: nothing written once the second volctl held the lock", after, before[0].State)
	}
	if n := h.mem.CallCount(csi.RPCNodePublishVolume); n != 0 {
		t.Errorf("NodePublishVolume sent %d times; want none", n)
	}
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
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			all := true
			for _, f := range frames {
				all = all && strings.Contains(g, f+"(")
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
