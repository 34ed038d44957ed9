package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// On a plugin that reads IDs regardless of case (FoldIDs), a delete of snapshot "snap-nightly"
// is recorded (its DeleteSnapshot unanswered: the plugin may have deleted it). A restore whose
// snapshot_id is that ID in upper case is a restore of that snapshot to the plugin, as
// refuseRestoreInFlight and refuseNearSnapshotDelete have it (spec.SameStorageID);
// notFromSnapshotBeingDeleted compared the ID exactly, so the restore was recorded and
// CreateVolume sent from a snapshot whose delete is recorded. Found by helper review69.
func TestRestoreFromANearSpellingOfASnapshotBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-"; c.FoldIDs = true })
	h.create(volume("db"))
	sn, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.unansweredSnapshotDelete(sn.ID)
	h.faults.Clear()
	if !h.deletingRecorded(sn.ID) {
		t.Fatalf("delete of %s not recorded", sn.ID)
	}
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	sv := volume("restored")
	sv.SnapshotID = strings.ToUpper(sn.ID)
	_, err = h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "is being deleted") ||
		!strings.Contains(err.Error(), "volctl volume snapshot delete mem "+sn.ID) {
		t.Errorf("restore from %q while the delete of %q is recorded: %v; want a conflict saying the snapshot is being deleted, naming the delete as recorded", sv.SnapshotID, sn.ID, err)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != calls {
		t.Errorf("CreateVolume sent %d time(s) restoring from a snapshot whose delete is recorded", n-calls)
	}
}

// unusableRestore is a restore of snapshot "nightly" of volume db that the plugin answers with a
// volume above its capacity_max (8MiB against 4MiB), which the create deletes again.
func unusableRestore(t *testing.T, h *harness) (SnapshotInfo, spec.Volume) {
	t.Helper()
	h.create(volume("db"))
	sn, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.Granularity = 8 << 20 })
	sv := volume("restored")
	sv.SnapshotID = sn.ID
	sv.CapacityMax = 4 << 20
	return sn, sv
}

// A restore answered with a volume it cannot use is cleaned up: createFailed marks its record
// deleting, deletes the answer, then puts it back to being created, sent again. A snapshot
// delete in another volctl during the cleanup was recorded and sent: refuseRestoreInFlight
// looked only at records being created (refuseCloneInFlight counts such a deleting record for
// a clone: TestSourceDeleteRefusedDuringACloneCleanup), and every CreateVolume after was
// NOT_FOUND. Found by helper review69.
func TestSnapshotDeleteRefusedWhileARestoreCleansUpAnUnusableAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sn, sv := unusableRestore(t, h)
	other, err := Open(h.ctx, h.e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	delErr := make(chan error, 1)
	started := false
	h.e.failpointHook = func(name string) {
		if name != "create:unusable" { // the restore's record marked deleting, its cleanup under way
			return
		}
		started = true
		go func() { delErr <- other.DeleteSnapshot(h.ctx, "mem", sn.ID, nil) }()
		deadline := time.Now().Add(5 * time.Second)
		for !h.deletingRecorded(sn.ID) && time.Now().Before(deadline) {
			select {
			case err := <-delErr:
				delErr <- err // refused at once: nothing to wait for
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	_, cerr := h.e.CreateVolume(h.ctx, sv)
	h.e.failpointHook = nil
	if !started {
		t.Fatalf("the restore passed no create:unusable failpoint: %v", cerr)
	}
	derr := <-delErr
	t.Logf("restore: %v", cerr)
	if !errors.Is(derr, ErrConflict) || !strings.Contains(derr.Error(), `volume "restored" is being created from snapshot`) {
		t.Errorf("snapshot %q deleted while volume \"restored\"'s restore from it was cleaning up an unusable answer: %v; want a conflict naming the restore", sn.ID, derr)
	}
	if len(h.mem.Snapshots()) != 1 {
		t.Errorf("the plugin's snapshots after the refused delete: %d, want the one restored from", len(h.mem.Snapshots()))
	}
}

// The same restore interrupted (^C) once its unusable answer was deleted again: nothing is left
// under the create's name, as after a kill there, yet the interrupt kept the intent "for
// reconcile", which made and deleted the unusable volume again at every pass, and the error
// said the create was recorded. Found by helper review69.
func TestCreateInterruptedOnceItsUnusableAnswerIsDeletedKeepsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	_, sv := unusableRestore(t, h)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.e.failpointHook = func(name string) {
		if name == "create:unusable-deleted" {
			cancel()
		}
	}
	_, err := h.e.CreateVolume(ctx, sv)
	h.e.failpointHook = nil
	if err == nil || strings.Contains(err.Error(), "the create is recorded") || !strings.Contains(err.Error(), "deleted that volume again") {
		t.Errorf("the create interrupted after its unusable answer was deleted again: %v; want its refusal, saying the volume was deleted again, nothing kept", err)
	}
	if _, verr := h.e.Volume(h.ctx, "restored"); !errors.Is(verr, ErrNotFound) {
		t.Errorf("volume restored after the interrupted create: %v; want no record", verr)
	}
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("reconcile after: %v %+v", err, rep.Problems)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != calls {
		t.Errorf("reconcile sent CreateVolume %d time(s) for a create whose answer was deleted again", n-calls)
	}
}
