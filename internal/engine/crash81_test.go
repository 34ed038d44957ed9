package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRestoreFromAnUnlistedSnapshotKilledThenReconciledIsNotRecordedRestored: `volume create`
// of a restore whose snapshot_id the plugin's listing says it does not have (and volctl does
// not record), through a plugin that ignores the content source and answers with an empty
// volume naming none. volctl is killed after CreateVolume answered, before createFailed deletes
// the empty volume (rpc:CreateVolume), or once it deleted it and put the bare intent back
// (create:unusable-deleted). `volctl reconcile` replays the create through finishCreate with a
// zero listedSnapshot: its replay check asks the plugin for the snapshot again and, not finding
// it, leaves SnapshotUnlisted false, so createdVolume's refusal of an unlisted restore does not
// apply and the empty answer is recorded ready, as restored from the snapshot: the user's data
// is not there and nothing says so. Correct: a replay whose check finds the snapshot neither
// recorded nor listed is treated as unlisted, as the first create was: refused, nothing
// recorded ready; its volume left alone (csi.CreateVolumeRequest.UnlistedKept: the first send
// may have restored data into it before the snapshot went), the advised delete removing it.
// Found by helper review81 (crash).
func TestRestoreFromAnUnlistedSnapshotKilledThenReconciledIsNotRecordedRestored(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"rpc:CreateVolume", "create:unusable-deleted"} {
		t.Run(at, func(t *testing.T) {
			h := newHarnessServing(t, csitest.WithInterceptor(ignoringContentSource()))
			sv := unlistedRestoreKilledAt(t, h, at)
			rep, err := h.e.Reconcile(h.ctx)
			t.Logf("reconcile: %v, problems %+v", err, rep.Problems)
			assertUnlistedRestoreNotRecorded(t, h, sv, "reconcile")
		})
	}
}

// TestRestoreFromAnUnlistedSnapshotKilledThenCreatedAgainIsNotRecordedRestored is
// TestRestoreFromAnUnlistedSnapshotKilledThenReconciledIsNotRecordedRestored finished by the same
// `volume create` run again: restoreReady asks nothing of a volume recorded (the intent), so the
// replay is sent without SnapshotUnlisted and the empty answer is recorded ready, "created".
// Correct: refused as the first create was, its volume left alone for the advised delete.
// Found by helper review81 (crash).
func TestRestoreFromAnUnlistedSnapshotKilledThenCreatedAgainIsNotRecordedRestored(t *testing.T) {
	t.Parallel()
	h := newHarnessServing(t, csitest.WithInterceptor(ignoringContentSource()))
	sv := unlistedRestoreKilledAt(t, h, "rpc:CreateVolume")
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Errorf("the same create run again after the kill said created (state %s, external ID %q); want it refused as the first create is", v.State, v.ExternalID)
	}
	assertUnlistedRestoreNotRecorded(t, h, sv, "the same create again")
}

// unlistedRestoreKilledAt runs h's create of volume "restored" from snapshot "snap-never-made"
// (which the plugin does not list, nor volctl record), killed at failpoint at, and opens the
// engine anew as the next process. It returns the spec.
func unlistedRestoreKilledAt(t *testing.T, h *harness, at string) spec.Volume {
	t.Helper()
	sv := volume("restored")
	sv.SnapshotID = "snap-never-made"
	if !cutShortAt(h, at, 1, func() { _, _ = h.e.CreateVolume(h.ctx, sv) }) {
		t.Fatalf("precondition: the restore never passed %s", at)
	}
	if h.mem.CallCount(csi.RPCListSnapshots) == 0 {
		t.Fatalf("precondition: the restore's check did not ask the plugin (ListSnapshots)")
	}
	h.open(h.e.cfg)
	return sv
}

// assertUnlistedRestoreNotRecorded checks, after what (the command that finished the killed
// restore), that volume "restored" is not recorded ready and the plugin holds no volume.
func assertUnlistedRestoreNotRecorded(t *testing.T, h *harness, sv spec.Volume, what string) {
	t.Helper()
	if h.mem.CallCount(csi.RPCCreateVolume) < 2 {
		t.Fatalf("precondition: %s did not send the restore again (CreateVolume sent %d time(s))", what, h.mem.CallCount(csi.RPCCreateVolume))
	}
	if got, err := h.e.Volume(h.ctx, sv.ID); err == nil && got.State == "ready" {
		t.Errorf("%s recorded the killed restore of snapshot %q, which the plugin does not have, ready (external ID %q) from an answer naming no content source; "+
			"want it refused as the first create is", what, sv.SnapshotID, got.ExternalID)
		return
	}
	// Refused, the volume left alone (the first send may have restored data into it before
	// the snapshot went), and the way the refusal names, `volume delete`, followed: the plugin
	// holds nothing, volctl records nothing.
	if vols := h.mem.Volumes(); len(vols) != 1 {
		t.Errorf("the plugin holds %d volume(s) after %s refused the replay; want the answer's left alone", len(vols), what)
	}
	if err := h.e.DeleteVolume(h.ctx, sv.ID); err != nil {
		t.Fatalf("volume delete %s, as the refusal advises: %v", sv.ID, err)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin holds %d volume(s) after the advised delete; want none", len(vols))
	}
	if _, err := h.e.Volume(h.ctx, sv.ID); err == nil {
		t.Errorf("volume %s still recorded after the advised delete", sv.ID)
	}
}
