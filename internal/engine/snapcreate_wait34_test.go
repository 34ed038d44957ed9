package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/store"
)

// chaos34: what round 33 left of a snapshot create waiting, its source volume's lock let go,
// for a hung delete of the snapshot the plugin answered with (snapshotLockAfterItsDelete).

// startCreateCountingWaits starts CreateSnapshot(db, nightly) with ctx, with a delete of the
// snapshot it will be answered with held in another volctl, and returns once the create waits
// for that delete's lock; waits gets each later lock wait's step (the retake's).
func (h *harness) startCreateCountingWaits(ctx context.Context) (gate chan struct{}, delDone, createDone <-chan error, info *SnapshotInfo, waits <-chan string) {
	h.t.Helper()
	s := h.snapshot("nightly")
	gate, delDone = h.deleteHeldOnceRecorded(s.ID)
	steps := make(chan string, 16)
	ctx = WithProgress(ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on ") {
			select {
			case steps <- step:
			default:
			}
		}
	})
	done := make(chan error, 1)
	info = new(SnapshotInfo)
	go func() {
		var err error
		*info, err = h.e.CreateSnapshot(ctx, "db", "nightly", nil)
		done <- err
	}()
	select {
	case <-steps:
	case err := <-done:
		close(gate)
		h.t.Fatalf("the create returned before waiting for the delete of the snapshot it was answered with: %v", err)
	case <-time.After(30 * time.Second):
		close(gate)
		h.t.Fatal("the create neither waited for a lock nor returned")
	}
	return gate, delDone, done, info, steps
}

// createAfterTheDelete waits for the held delete, once its gate is closed, and then for the
// create that waited for it, returning the create's error.
func (h *harness) createAfterTheDelete(delDone, createDone <-chan error) error {
	h.t.Helper()
	if err := <-delDone; err != nil {
		h.t.Errorf("the delete: %v", err)
	}
	select {
	case err := <-createDone:
		return err
	case <-time.After(30 * time.Second):
		h.t.Fatal("the create never returned once the delete ended")
		return nil
	}
}

// A cancel (^C) while the create, the delete it waited for over, waits to take its source
// volume's lock again (another volctl holds it): the create returns at once, saying the snapshot
// stays recorded as being created, holds no lock after, and reconcile finishes it. Round 33
// cancelled only the wait for the delete.
func TestSnapshotCreateCancelledWhileRetakingItsVolumeLock(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	gate, delDone, createDone, _, waits := h.startCreateCountingWaits(ctx)
	other := h.otherProcess()
	unlockV, err := other.locks.volume(h.ctx, "db") // a third volctl's claim of db, say
	if err != nil {
		close(gate)
		t.Fatal(err)
	}
	defer func() { unlockV() }()
	close(gate)
	if err := <-delDone; err != nil {
		t.Errorf("the delete: %v", err)
	}
	select {
	case step := <-waits:
		if !strings.Contains(step, `"db"`) && !strings.Contains(step, "db") {
			t.Errorf("the create, the delete over, waits for %q; want volume db's lock", step)
		}
	case err := <-createDone:
		t.Fatalf("the create returned without waiting for volume db's lock, held by another volctl: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the create never waited for volume db's lock once the delete ended")
	}
	cancel()
	select {
	case err = <-createDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the create, cancelled while it waited for volume db's lock, did not return")
	}
	t.Logf("create: %v", err)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("the create cancelled while it retook db's lock returned %v, want the cancel", err)
	}
	if err != nil && !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("the cancelled create does not say reconcile finishes what it left: %v", err)
	}
	if _, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.SnapshotCreate, error) { return tx.Snapshots().GetCreate("mem", "nightly") }); err != nil {
		t.Errorf("the cancelled create's intent: %v (want it kept for reconcile)", err)
	}
	unlockV()
	unlockV = func() {}
	// It holds no lock: a claim of db goes on, and reconcile makes and records the snapshot.
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	h.reconcileClean(1)
	h.snapshotsMatch("after the reconcile")
	if len(h.mem.Snapshots()) != 1 {
		t.Errorf("the plugin holds %+v after the reconcile; want nightly", h.mem.Snapshots())
	}
}

// The source volume deregistered by another volctl while the create waits (its lock let go):
// the snapshot the create then makes exists at the plugin, so it is recorded, as a snapshot of
// a volume deleted or deregistered later stays recorded; a lost record would leave a snapshot
// nothing lists or deletes. The record is the plugin's, and a delete by its name removes both.
func TestSnapshotCreateWaitingWhileItsVolumeIsDeregisteredRecordsTheSnapshot(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	gate, delDone, createDone, info, _ := h.startCreateCountingWaits(h.ctx)
	other := h.otherProcess()
	if _, err := other.DeregisterVolume(h.ctx, "db", false); err != nil {
		close(gate)
		t.Fatalf("deregister db while a snapshot create of it waits: %v", err)
	}
	close(gate)
	err := h.createAfterTheDelete(delDone, createDone)
	t.Logf("create: %+v %v", *info, err)
	if err != nil {
		t.Errorf("the create, its volume deregistered meanwhile (its storage kept): %v", err)
	}
	h.snapshotsMatch("after the create")
	if err == nil && (info.ID == "" || !h.recordedSnapshot(info.ID)) {
		t.Errorf("the create said it made snapshot %q, which is not recorded", info.ID)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "nightly", nil); err != nil {
		t.Errorf("delete nightly, of a volume deregistered since: %v", err)
	}
	h.snapshotsMatch("after its delete")
}

// A volume delete while a snapshot create of the volume waits for a hung delete: refused, as
// the create is recorded in flight, and the refusal does not say the create was interrupted
// (it may be running still, in another volctl): it says it may be either. Before, it said
// "whose CreateSnapshot was interrupted" of a create only waiting.
func TestVolumeDeleteWhileASnapshotCreateWaitsSaysItMayBeRunning(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	gate, delDone, createDone, _, _ := h.startCreateCountingWaits(h.ctx)
	other := h.otherProcess()
	derr := other.DeleteVolume(h.ctx, "db")
	close(gate)
	<-delDone
	if err := <-createDone; err != nil {
		t.Errorf("the create: %v", err)
	}
	t.Logf("volume delete: %v", derr)
	wantConflict(t, "the volume delete", derr, `"db"`, `"nightly"`, "still running", "volctl reconcile")
	if derr != nil && strings.Contains(derr.Error(), "whose CreateSnapshot was interrupted") {
		t.Errorf("the volume delete says the create was interrupted, while it only waits: %v", derr)
	}
}
