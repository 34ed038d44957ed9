package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestReconcileBesideAnExpandSaysTheSizeItExpandedOnTheNode: volume v is published to web-0
// and owes a NodeExpandVolume to 4MiB (an expand whose node step failed). A `volctl reconcile`
// (or the agent's pass) lists the volumes, then waits for v's lock while another volctl's
// `volume expand v --size 8MiB` holds it: that expand grows the storage to 8MiB and leaves the
// node expansion owed at 8MiB (its node step fails too). The reconcile then takes the lock,
// reads v again and sends NodeExpandVolume to 8MiB, which succeeds, but reports "volume "v"
// expanded on the node to 4MiB (owed since an earlier expand)": the size from its listing
// before the wait (reconcileExpansions' rep.did uses listed.NodeExpandMin), not what it sent
// and what the file system is now. A report that names the wrong size of what it did.
//
// Correct: the action names the size of the debt it paid, read under the lock (8MiB).
// Found by helper review83 (race).
func TestReconcileBesideAnExpandSaysTheSizeItExpandedOnTheNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatalf("premise: the expand whose NodeExpandVolume failed succeeded")
	}
	if got := h.owed("v"); got != 4*mib {
		t.Fatalf("premise: node expansion owed %s after the failed node step, want 4MiB", spec.FormatSize(got))
	}

	// Another volctl's expand to 8MiB, paused with v's lock held (its intent recorded), its
	// NodeExpandVolume to fail once more.
	other := h.otherProcess()
	p := pauseAtFailpoint(t, other, "expand:intent")
	expDone := make(chan error, 1)
	go func() { _, err := other.ExpandVolume(h.ctx, "v", 8*mib, 0); expDone <- err }()
	select {
	case <-p.reached:
	case err := <-expDone:
		t.Fatalf("premise: the other expand returned before its intent: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("premise: the other expand never reached expand:intent")
	}
	h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	type result struct {
		rep ReconcileReport
		err error
	}
	recDone := make(chan result, 1)
	go func() { rep, err := h.e.Reconcile(ctx); recDone <- result{rep, err} }()
	select {
	case <-waiting:
	case r := <-recDone:
		p.release()
		t.Fatalf("premise: the reconcile did not wait for v's lock: %+v, %v", r.rep, r.err)
	case <-time.After(30 * time.Second):
		p.release()
		t.Fatalf("premise: the reconcile never waited for v's lock")
	}
	p.release()
	if err := <-expDone; err == nil {
		t.Fatalf("premise: the other expand's node step was to fail")
	}
	r := <-recDone
	if r.err != nil {
		t.Fatalf("reconcile: %v (%+v)", r.err, r.rep)
	}
	if got := h.owed("v"); got != 0 {
		t.Fatalf("premise: the reconcile left %s owed", spec.FormatSize(got))
	}
	reqs := h.nodeExpands()
	if last := reqs[len(reqs)-1]; last.CapacityMin != 8*mib {
		t.Fatalf("premise: the reconcile's NodeExpandVolume asked %s, want 8MiB", spec.FormatSize(last.CapacityMin))
	}
	var said []string
	for _, a := range r.rep.Actions {
		if a.VolumeID == "v" && a.Kind == "expanded" {
			said = append(said, a.Message)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "8MiB") || strings.Contains(said[0], "4MiB") {
		t.Errorf("reconcile sent NodeExpandVolume to 8MiB (the debt the other expand left) and reported %q; want it to name 8MiB, the size it expanded to", said)
	}
}
