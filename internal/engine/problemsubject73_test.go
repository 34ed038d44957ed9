package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"google.golang.org/grpc/codes"
)

// TestSnapshotDeleteProblemsNameTheirSnapshotAsSubject: two recorded snapshot deletes reconcile
// cannot finish are two problems with two subjects (ReconcileAction.Subject: the plugin and the
// snapshot's ID), which the agent's log keys them by: told apart by their messages' words alone,
// with IDs masked, two snapshots' were one (the agent's
// TestSecondStuckSnapshotDeleteIsLoggedWhileTheFirstStillFails).
func TestSnapshotDeleteProblemsNameTheirSnapshotAsSubject(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	a, b := h.snapshot("nightly-20261207"), h.snapshot("nightly-20261208")
	h.unansweredSnapshotDelete(a.ID)
	h.unansweredSnapshotDelete(b.ID)
	h.faults.Clear()
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.Internal)
	rep, _ := h.e.Reconcile(h.ctx)
	subjects := map[string]bool{}
	for _, p := range rep.Problems {
		if p.Subject == "" {
			t.Errorf("problem %q has no subject", p.Message)
		}
		subjects[p.Subject] = true
	}
	if len(rep.Problems) != 2 || len(subjects) != 2 {
		t.Fatalf("reconcile's problems %+v; want the two snapshots' deletes, each its own subject", rep.Problems)
	}
}
