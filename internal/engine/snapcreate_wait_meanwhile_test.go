package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// The branches of snapshotLockAfterItsDelete that round 33 named and did not try: while a
// snapshot create waits, its source volume's lock let go, for a hung delete of the snapshot the
// plugin answered with, another volctl forgets the create's intent (`snapshot deregister`) or
// finishes it (its reconcile). The create must not ask the plugin again for a snapshot the user
// forgot, nor make a second one beside the one the other volctl recorded.

// startCreateWaitingForTheDelete starts CreateSnapshot(db, nightly) with ctx in h's process, with
// a delete of the snapshot it will be answered with held in another volctl, and returns once the
// create waits for that delete's lock.
func (h *harness) startCreateWaitingForTheDelete(ctx context.Context) (gate chan struct{}, delDone <-chan error, createDone <-chan error, info *SnapshotInfo) {
	h.t.Helper()
	gate, delDone, createDone, info, _ = h.startCreateCountingWaits(ctx)
	return gate, delDone, createDone, info
}

func TestSnapshotCreateWaitingForAHungDeleteWhoseIntentIsForgottenMeanwhile(t *testing.T) {
	t.Parallel()
	// Snapshot IDs other than their names, so that `snapshot deregister mem nightly` names the
	// pending create, not the snapshot being deleted.
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	gate, delDone, createDone, _ := h.startCreateWaitingForTheDelete(h.ctx)
	sent := h.mem.CallCount(csi.RPCCreateSnapshot)

	// The user forgets the pending create in another volctl: the volume's lock is free to take.
	other := h.otherProcess()
	dctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	_, derr := other.DeregisterSnapshot(dctx, "mem", "nightly")
	cancel()
	close(gate)
	if derr != nil {
		t.Fatalf("snapshot deregister of the pending create beside a create waiting for a hung delete: %v", derr)
	}
	err := h.createAfterTheDelete(delDone, createDone)
	t.Logf("create: %v", err)
	if err == nil {
		t.Fatal("the create of a snapshot forgotten while it waited said it made it")
	}
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "deregister") {
		t.Errorf("the create's error %q does not say the intent was forgotten (a not found naming `snapshot deregister`)", err)
	}
	if strings.Contains(err.Error(), "stays recorded as being created") {
		t.Errorf("the create's error %q says the intent stays recorded for reconcile; it was forgotten", err)
	}
	if n := h.mem.CallCount(csi.RPCCreateSnapshot) - sent; n != 0 {
		t.Errorf("%d CreateSnapshot sent after the user forgot the create", n)
	}
	if snaps := h.mem.Snapshots(); len(snaps) != 0 {
		t.Errorf("the plugin holds %d snapshot(s) after the delete and the forgotten create: %+v", len(snaps), snaps)
	}
	h.reconcileClean(1)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"}) // no lock left held
}

func TestSnapshotCreateWaitingForAHungDeleteFinishedMeanwhileByAnotherVolctl(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	gate, delDone, createDone, info := h.startCreateWaitingForTheDelete(h.ctx)

	// Another volctl's reconcile takes the volume's lock the create let go, finds the intent, is
	// answered with the same snapshot and waits for the same delete.
	other := h.otherProcess()
	rctx, rwaiting := whenWaitingForAnyLock(h.ctx)
	var (
		rep  ReconcileReport
		rerr error
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() { defer wg.Done(); rep, rerr = other.Reconcile(rctx) }()
	select {
	case <-rwaiting:
	case <-time.After(30 * time.Second):
		close(gate)
		wg.Wait()
		t.Fatalf("the reconcile did not wait for the delete: %+v %v", rep, rerr)
	}
	sent := h.mem.CallCount(csi.RPCCreateSnapshot) // both were answered with the snapshot being deleted
	close(gate)
	err := h.createAfterTheDelete(delDone, createDone)
	wg.Wait()
	t.Logf("create: %+v %v; reconcile: %+v %v", *info, err, rep, rerr)
	if err != nil {
		t.Errorf("the create, finished by it or by the other volctl: %v", err)
	}
	if rerr != nil || len(rep.Problems) != 0 {
		t.Errorf("the other volctl's reconcile: %v, problems %+v", rerr, rep.Problems)
	}
	if n := h.mem.CallCount(csi.RPCCreateSnapshot) - sent; n != 1 {
		t.Errorf("%d CreateSnapshot sent once the delete ended; want 1 (one of the two asks, the other takes its record)", n)
	}
	snaps := h.mem.Snapshots()
	if len(snaps) != 1 {
		t.Fatalf("the plugin holds %d snapshots; want 1: %+v", len(snaps), snaps)
	}
	if info.ID == "" || !h.recordedSnapshot(info.ID) {
		t.Errorf("the create answered with snapshot %q, which is not recorded", info.ID)
	}
	var recs []store.Snapshot
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		var err error
		recs, err = tx.Snapshots().List("mem")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].SnapshotID != info.ID {
		t.Errorf("records %+v; want only the create's answer %q", recs, info.ID)
	}
	h.reconcileClean(1)
}
