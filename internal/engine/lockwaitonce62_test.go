package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// docs/agent.md: "A pass (and the claim GC) waits at most 30 s for a volume's lock another
// volctl holds; past it, that volume is logged as left for the next pass, and the others go
// on". A volume with several claims to restore (a multi-writer volume claimed by three allocs,
// after a reboot) whose lock a hung command holds costs the pass one full wait per claim, and
// one more for its staging: the pass, and the agent's housekeeping loop with it (plugin
// registrations, claim GC, re-drives), was held n+1 times the bound, 2 min for 3 claims at 30 s.
// Now a lock waited out once is not waited for again in the pass, and the later items say so.
// Found by helper review62.
func TestPassWaitsForAHeldVolumesLockOncePerPass(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const wait = 300 * time.Millisecond
	h.open(Config{PassLockWait: wait})
	heldVolumeRebooted(h)
	unlock := h.lockVolume("held")
	defer unlock()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	rep, err := h.e.Reconcile(ctx)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("reconcile with volume held's lock held: %+v; want it reported", rep)
	}
	waits, again := lockWaitsOfThePass(rep, `the lock on volume "held": another volctl has held it for more than`)
	if took >= 2*wait || waits != 1 || again != 3 {
		t.Fatalf("the pass took %s, waited out volume held's lock %d times (bound %s each), and said %d items were left for that wait: "+
			"a volume whose lock is held is to cost a pass one wait, its other three items left saying so; problems:\n%+v",
			took.Round(time.Millisecond), waits, wait, again, rep.Problems)
	}
}

// heldVolumeRebooted makes volume "held", multi-writer, claimed by allocs a, b and c, its
// targets and staging gone as after a reboot: a pass has four items of it to restore.
func heldVolumeRebooted(h *harness) {
	h.create(volume("held", capab(spec.MultiNodeMultiWriter)))
	for _, alloc := range []string{"a", "b", "c"} {
		cl := h.claim(ClaimRequest{VolumeID: "held", Alloc: alloc})
		h.mounts.markGone(cl.TargetPath)
	}
	st, _ := h.staging("held")
	h.mounts.markGone(st.StagingPath)
}

// lockWaitsOfThePass counts the problems of rep that say a wait for volume held's lock was
// given up (their words hold waited) and those left for that wait (waited out once already).
func lockWaitsOfThePass(rep ReconcileReport, waited string) (waits, again int) {
	for _, p := range rep.Problems {
		switch {
		case strings.Contains(p.Message, "waited out once in this pass already"):
			again++
		case strings.Contains(p.Message, waited):
			waits++
		}
	}
	return waits, again
}
