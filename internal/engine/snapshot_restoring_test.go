package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// `volume snapshot delete` of the snapshot a volume's interrupted create restores from: the
// create is recorded (its CreateVolume went unanswered: the plugin was unavailable), and only
// a CreateVolume sent again, by reconcile or the same create, finishes it, which needs the
// snapshot. Before, the delete went through, and every CreateVolume after it was answered
// NOT_FOUND: a final answer to a call sent again keeps the intent (an earlier one may have made
// the volume), so reconcile reported the create every pass for good. The delete is refused,
// naming the volume and the way on; once the create is finished, the snapshot deletes.
func TestSnapshotDeleteRefusedWhileAVolumeIsBeingRestoredFromIt(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	sv := volume("restored")
	sv.SnapshotID = s.ID
	h.interruptedRestore(sv)

	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("deleting the snapshot volume restored's interrupted create restores from: %v; want a conflict", err)
	}
	for _, want := range []string{`volume "restored"`, s.ID, "volctl reconcile"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile finishing the create: %v %+v", err, rep)
	}
	if v := h.volumeInfo("restored"); v.State != string(store.VolumeReady) {
		t.Errorf("volume restored after reconcile: %s; want ready", v.State)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Errorf("deleting the snapshot once the restore is finished: %v", err)
	}
}

// A snapshot delete past its check that no volume is being restored from the snapshot, held
// there (at the first lock it takes after, in another process), while a restore from the
// snapshot records its intent and is cut short before CreateVolume finishes (the plugin
// unavailable). Before, the check ran in a read-only view and recorded nothing: the restore was
// recorded, the delete went on, and the restore's CreateVolume, sent again by every reconcile,
// was NOT_FOUND for the snapshot for good. The delete is recorded with its check, and the
// restore is refused, naming the snapshot and the delete that finishes it.
func TestSnapshotDeleteRefusesARestoreRecordedAfterItsCheck(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	// Another process, held past its check and the record of its delete, nothing sent.
	gate, deleteErr := h.deleteHeldOnceRecorded(s.ID)
	sv := volume("restored")
	sv.SnapshotID = s.ID
	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	_, err := h.e.CreateVolume(h.ctx, sv)
	h.faults.Clear(csi.RPCCreateVolume)
	close(gate)
	if derr := <-deleteErr; derr != nil {
		t.Fatalf("the snapshot's delete: %v", derr)
	}
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("restore from a snapshot whose delete is recorded: %v; want a conflict", err)
	}
	for _, want := range []string{s.ID, `volume "restored"`, "being deleted", "volctl volume snapshot delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	h.reconcileClean(2)
	if _, err := h.e.Volume(h.ctx, "restored"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused restore is recorded: %v", err)
	}
}

// A snapshot delete the plugin refuses for good (FAILED_PRECONDITION: the snapshot is kept)
// forgets its recorded delete, and one whose answer may come later (UNAVAILABLE: the plugin
// may have deleted it) keeps it, refusing restores until the delete again finishes.
func TestSnapshotDeleteRecordKeptOnlyWhileTheSnapshotMayBeGone(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	restore := func(id string) (VolumeInfo, error) {
		sv := volume(id)
		sv.SnapshotID = s.ID
		return h.e.CreateVolume(h.ctx, sv)
	}
	h.faults.FailOnce(csi.RPCDeleteSnapshot, codes.FailedPrecondition)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err == nil {
		t.Fatal("a delete refused by the plugin succeeded")
	}
	if _, err := restore("kept"); err != nil {
		t.Fatalf("restore from a snapshot whose delete the plugin refused: %v", err)
	}
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.Unavailable)
	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if err == nil || !strings.Contains(err.Error(), "the delete stays recorded") {
		t.Fatalf("a delete unanswered: %v; want it to say the delete stays recorded", err)
	}
	h.faults.Clear()
	if _, err := restore("refused"); !errors.Is(err, ErrConflict) {
		t.Fatalf("restore while the unanswered delete is recorded: %v; want a conflict", err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatalf("the delete again: %v", err)
	}
	if _, err := restore("gone"); errors.Is(err, ErrConflict) || err == nil {
		t.Fatalf("restore from the deleted snapshot: %v; want the plugin's NOT_FOUND, not a refusal of a delete recorded", err)
	}
}

// interruptedRestore creates sv (a restore from a snapshot) with its plugin unavailable at
// every CreateVolume, leaving the create recorded, the volume creating, for reconcile.
func (h *harness) interruptedRestore(sv spec.Volume) {
	h.t.Helper()
	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		h.t.Fatal("the create with its plugin unavailable succeeded")
	}
	h.faults.Clear()
	if v := h.volumeInfo(sv.ID); v.State != string(store.VolumeCreating) {
		h.t.Fatalf("volume %s after the interrupted create: %s; want creating", sv.ID, v.State)
	}
}
