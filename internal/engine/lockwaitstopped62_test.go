package engine

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// A background pass waits out a held lock once (lockWaits), its other items for that lock left
// at once. A holder stopped by a signal (^Z, the case PassLockWait is documented for) or stuck in
// the kernel ends await through stoppedWait, not the bound: that wait was not noted, and each of
// the volume's claims and its staging waited stoppedWait (10 s) again, n+1 waits a pass. Now it
// is noted as the bound's is, the later items saying the first wait's words. Found by helper
// review62, reviewing this round's fix.
func TestPassWaitsForAStoppedHoldersLockOncePerPass(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{PassLockWait: 30 * time.Second})
	heldVolumeRebooted(h)
	h.e.locks.stoppedWait = 400 * time.Millisecond
	holder := holdLockInAnotherProcess(t, h, "volume-held")
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
	defer cancel()
	rep, err := h.e.Reconcile(ctx)
	if err == nil {
		t.Fatalf("reconcile with volume held's lock held by a stopped process: %+v; want it reported", rep)
	}
	waits, again := lockWaitsOfThePass(rep, `the lock on volume "held" is held by pid`)
	if waits != 1 || again != 3 {
		t.Fatalf("the pass waited for the stopped holder of volume held's lock %d times (stoppedWait each), and said %d items were left for that wait; "+
			"want one wait, its other three items left saying so; problems:\n%+v", waits, again, rep.Problems)
	}
}
