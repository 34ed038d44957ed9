package engine

import (
	"testing"
)

// TestAPassThatLookedAtNothingIsNotWhole: a reconcile pass that failed before it looked at
// anything (the mount table unreadable: tableUnreadable) reports no problem, which the agent took for "nothing
// wrong any more" and logged every problem it had logged as resolved; such a pass is not Whole,
// and a pass that looked at everything is, with its problems or without. The agent's side:
// TestAPassThatLookedAtNothingResolvesNoProblem. Found by helper review77 (reconcile), not
// written as a test there.
func TestAPassThatLookedAtNothingIsNotWhole(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	table := &tableUnreadable{fakeMounts: h.mounts}
	h.open(Config{Mounts: table})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if rep, err := h.e.Reconcile(h.ctx); !rep.Whole() {
		t.Errorf("a pass that looked at everything (%v, problems %+v) is not Whole", err, rep.Problems)
	}
	table.fail.Store(true)
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || rep.Whole() {
		t.Errorf("a pass whose mount table read failed: %v, whole %v; want an error, not whole", err, rep.Whole())
	}
}
