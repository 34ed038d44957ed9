package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// pendingCreateRecorded says whether a create of snapshot name through plugin mem is recorded.
func pendingCreateRecorded(h *harness, name string) bool {
	h.t.Helper()
	return storeFinds(h, func(tx *store.Tx) error {
		_, err := tx.Snapshots().GetCreate("mem", name)
		return err
	})
}

// storeFinds says whether get, a read of one row, finds it; any failure but store.ErrNotFound
// ends the test.
func storeFinds(h *harness, get func(tx *store.Tx) error) bool {
	h.t.Helper()
	var found bool
	err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		err := get(tx)
		found = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return found
}

// A `snapshot delete mem NAME` of a snapshot still being created (its create cut short) reads
// the create's intent, then waits for the source volume's lock to finish it
// (finishPendingForDelete), since CreateSnapshot under the NAME is the only way to learn the
// ID. Meanwhile another volctl held that lock and forgot the create: here `snapshot deregister
// mem NAME`; the same happens when another delete of the NAME, or the create itself failing
// for good, ends the intent while this one waits. Once it has the lock, the delete does not
// read the intent again (reconcileSnapshots does: "Another volctl may have finished it
// meanwhile") and sends CreateSnapshot under the NAME with no intent recorded, breaking the
// checkpoint rule: the plugin takes a snapshot of the user's volume nobody asked for, and when
// that CreateSnapshot's answer is lost the delete fails saying the snapshot "stays recorded as
// being created" and that `volctl reconcile` finishes it, while nothing is recorded at all:
// reconcile finds nothing, the advised `volctl volume snapshot delete mem nightly` takes the
// NAME for an ID the plugin does not have, and the snapshot the delete's own CreateSnapshot
// made is left on the storage, tracked by nothing.
//
// Correct behaviour: under the volume's lock the delete reads the intent again; gone, it sends
// no CreateSnapshot and says the create was forgotten (or finished) by another volctl
// meanwhile, as snapshotLockAfterItsDelete does after its own wait. Found by helper review74.
func TestPendingSnapshotDeleteThatWaitedForItsDeregisterSendsNoCreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("v"))
	pendingSnapshotMade(t, h, "nightly", false) // the create recorded, nothing made
	if !pendingCreateRecorded(h, "nightly") {
		t.Fatalf("precondition: the create of nightly is not recorded")
	}
	ext := h.volumeInfo("v").ExternalID

	other := h.otherProcess()
	p := pauseAtFailpoint(t, h.e, "snapshot:deregistering")
	aDone := make(chan error, 1)
	go func() { _, err := h.e.DeregisterSnapshot(h.ctx, "mem", "nightly"); aDone <- err }()
	select {
	case <-p.reached:
	case err := <-aDone:
		t.Fatalf("the deregister of the pending nightly returned before holding its locks: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the deregister never reached snapshot:deregistering")
	}

	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	bDone := make(chan error, 1)
	go func() { _, err := other.DeleteSnapshotNoted(ctx, "mem", "nightly", nil); bDone <- err }()
	select {
	case <-waiting:
	case err := <-bDone:
		t.Fatalf("the delete of the pending nightly returned without waiting for the deregister: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the delete of the pending nightly never waited for the deregister's lock")
	}

	// From here the plugin does what a CreateSnapshot asks and its answer is lost, then stays
	// unreachable for CreateSnapshot.
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Times: 1})
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Times: 20})
	creates := h.faults.Calls(csi.RPCCreateSnapshot)
	var unrecordedCreate []bool
	onFailpoints(t, func(name string) {
		if name == "rpc:CreateSnapshot" {
			unrecordedCreate = append(unrecordedCreate, !pendingCreateRecorded(h, "nightly"))
		}
	}, other)

	p.release()
	var aErr, bErr error
	for _, ch := range []struct {
		what string
		c    chan error
		to   *error
	}{{"deregister", aDone, &aErr}, {"delete", bDone, &bErr}} {
		select {
		case *ch.to = <-ch.c:
		case <-time.After(30 * time.Second):
			t.Fatalf("the %s never returned", ch.what)
		}
	}
	if aErr != nil {
		t.Fatalf("the deregister of the pending nightly: %v", aErr)
	}

	sent := h.faults.Calls(csi.RPCCreateSnapshot) - creates
	if sent > 0 {
		t.Errorf("the delete that waited for the deregister sent CreateSnapshot %d time(s) for nightly, whose create the deregister had forgotten "+
			"(no intent recorded at the RPC: %v); want none sent. The delete returned: %v", sent, unrecordedCreate, bErr)
	}
	if !errors.Is(bErr, ErrNotFound) || !strings.Contains(bErr.Error(), "another volctl") {
		t.Errorf("the delete that waited for the deregister of the pending nightly: %v; want not found, saying another volctl forgot it meanwhile", bErr)
	}
	if bErr != nil && strings.Contains(bErr.Error(), "stays recorded as being created") && !pendingCreateRecorded(h, "nightly") {
		t.Errorf("the delete says nightly stays recorded as being created, and no create of it is recorded: %v", bErr)
	}
	// What reconcile would finish is recorded; the plugin must hold nothing the store does not
	// account for.
	if rep, err := h.e.Reconcile(context.WithoutCancel(h.ctx)); err != nil {
		t.Fatalf("reconcile: %v", err)
	} else if !rep.OK() {
		t.Logf("reconcile problems: %+v", rep.Problems)
	}
	// The delete's own advice, followed: `volctl volume snapshot delete mem nightly`.
	h.faults.Clear()
	if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil); err != nil {
		t.Logf("the advised delete again: %v", err)
	}
	if msg := snapshotsUntracked(h, "v", []string{ext}); msg != "" {
		t.Errorf("after the deregister, the delete, a reconcile and the advised delete again: %s (made by the delete's CreateSnapshot sent with no intent recorded)", msg)
	}
}
