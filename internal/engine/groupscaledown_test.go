package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A `group run` that scales a group down records the smaller count first, then releases the
// allocs past it (runGroup). Killed in between (a crash, a power loss, SIGKILL), the allocs past
// the count kept their claims, the group recorded at the new count: reconcile and the agent's
// claim GC, which release a stopped group's claims, left them held for good, a single-writer
// volume of a gone alloc refused to every other. They are past claims as a stopped group's
// are: reconcile and claim GC release them, each checked again under its volume's lock
// (pastClaim), as the scale-down would have.
func TestReconcileFinishesAScaleDownAKillCutShort(t *testing.T) {
	t.Parallel()
	for _, pass := range []string{"reconcile", "claim GC"} {
		t.Run(pass, func(t *testing.T) {
			h := newHarness(t, nil)
			h.createDBVolumes(2)
			if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
				t.Fatal(err)
			}
			// What `group run` of dbGroup(1) killed after its first commit leaves.
			h.update(func(tx *store.Tx) error {
				return tx.Groups().Put(&store.Group{Name: "db", Spec: dbGroup(1), Count: 1, State: store.GroupRunning})
			})
			var err error
			var rep ReconcileReport
			if pass == "reconcile" {
				rep, err = h.e.Reconcile(h.ctx)
			} else {
				rep, err = h.e.ReleasePast(h.ctx)
			}
			if err != nil {
				t.Fatalf("%s: %v %+v", pass, err, rep.Problems)
			}
			if cls := h.liveClaims("data[1]"); len(cls) != 0 {
				t.Fatalf("after %s, alloc db[1], past the group's count 1, still holds data[1]: %+v", pass, cls)
			}
			shared := h.liveClaims("shared")
			if len(shared) != 1 || shared[0].Alloc != spec.AllocName("db", 0) {
				t.Fatalf("after %s, shared's claims = %+v, want db[0]'s alone", pass, shared)
			}
			if cls := h.liveClaims("data[0]"); len(cls) != 1 || cls[0].State != store.ClaimPublished {
				t.Fatalf("after %s, db[0]'s claim on data[0] = %+v, want it held, published", pass, cls)
			}
			released := 0
			for _, a := range rep.Actions {
				if a.Kind == "released" && a.Alloc == spec.AllocName("db", 1) {
					released++
				}
			}
			if released != 2 {
				t.Errorf("%s's actions = %+v, want db[1]'s two claims released", pass, rep.Actions)
			}
			// The group is as the run that was killed meant it: one alloc, all its volumes.
			gs, err := h.e.Groups(h.ctx, "db")
			if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
				t.Fatalf("group status after %s = %+v, %v; want one alloc", pass, gs, err)
			}
		})
	}
}

// A group run again with a larger count while a pass lists the claims: the claims of the allocs
// the new count covers are the run's, not past (pastClaim reads the count under the volume's
// lock), and the pass leaves them.
func TestReconcileLeavesTheClaimsOfAGroupScaledUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(3)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(3)); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("reconcile of a group at rest = %+v, %v; want nothing done", rep, err)
	}
	if rep, err := h.e.ReleasePast(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("claim GC of a group at rest = %+v, %v; want nothing done", rep, err)
	}
	for i := range 3 {
		if cls := h.liveClaims(spec.AllocName("data", i)); len(cls) != 1 {
			t.Fatalf("data[%d]'s claims = %+v, want one", i, cls)
		}
	}
}
