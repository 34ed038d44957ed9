package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// State dir A creates and claims v (the plugin publishes it to node-1). State dir B's create
// of w is answered, by a plugin that maps two names onto one storage volume, with v's storage,
// too small: B's cleanup records w deleting with v's ID, and is killed before it asks which
// nodes hold it (create:unusable). reconcile finishes the cleanup as a delete: the delete's own
// question finds v published and refuses. Before, the refusal put w back to ready, as a refused
// `volume delete` puts a volume it was asked to delete: B then recorded A's storage as w, ready
// (an answer it had refused as unusable), its claims ignoring A's access mode and its `volume
// delete` deleting A's data once A released it. Now the cleanup's refusal does what the cleanup
// does: w goes back to its create's intent, v's storage is left alone and recorded nowhere in B.
func TestCreateCleanupKilledThenReconciledDoesNotRecordTheAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	a := h.otherStateDir()
	v, err := a.CreateVolume(h.ctx, volume("v"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerCreateWith(v.ExternalID)
	sv := volume("w")
	sv.CapacityMin = 1 << 40 // more than v's storage holds: the answer is unusable
	killedAt(h, "create:unusable", func() { _, _ = h.e.CreateVolume(h.ctx, sv) })
	h.mem.ResetCalls()

	_, _ = h.e.Reconcile(h.ctx) // its problem: the cleanup refused
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("reconcile sent DeleteVolume %d time(s) for volume %q, published to node-1 by state dir A", n, v.ExternalID)
	}
	if _, ok := h.mem.Volume(v.ExternalID); !ok {
		t.Fatalf("the plugin deleted volume %q, state dir A's, published to node-1", v.ExternalID)
	}
	w, err := h.e.Volume(h.ctx, "w")
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		t.Fatal(err)
	case w.ExternalID == v.ExternalID || w.State == string(store.VolumeReady):
		t.Errorf("w after reconcile finished its create's cleanup: %s with external ID %q; want its create's intent (no external ID) or nothing: "+
			"that answer was refused as unusable, and is state dir A's volume", w.State, w.ExternalID)
	}
	// And w can be got rid of: its delete forgets the intent, sending nothing that deletes.
	if _, err := h.e.Volume(h.ctx, "w"); err == nil {
		_ = h.e.DeleteVolume(h.ctx, "w")
		if _, err := h.e.Volume(h.ctx, "w"); !errors.Is(err, ErrNotFound) {
			t.Errorf("w after its delete: %v; want it forgotten", err)
		}
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s) for volume %q, state dir A's", n, v.ExternalID)
	}
	if _, ok := h.mem.Volume(v.ExternalID); !ok {
		t.Fatalf("the plugin deleted volume %q, state dir A's, published to node-1", v.ExternalID)
	}
}

// A create's answer too large (a plugin allocating 1 GiB whatever the limit) is removed again,
// and the plugin refuses that DeleteVolume FAILED_PRECONDITION, twice: the create's cleanup
// leaves w deleting, and reconcile's DeleteVolume is refused again. Before, reconcile's refusal
// put w back to ready, as a refused `volume delete` does: the answer volctl had refused as
// unusable (1 GiB past capacity_max 1 MiB) recorded as w, ready to claim. Now it stays
// deleting, for the next reconcile; and once the plugin takes the DeleteVolume, it goes.
func TestCreateCleanupRefusedByThePluginStaysDeleting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30 })
	sv := volume("w")
	sv.CapacityMax = 1 << 20
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.FailedPrecondition, Times: 2})
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create answered past its capacity_max, its cleanup refused: succeeded")
	}
	if w := h.volumeInfo("w"); w.State != string(store.VolumeDeleting) {
		t.Fatalf("w after its cleanup was refused: %s; want deleting", w.State)
	}
	_, _ = h.e.Reconcile(h.ctx)
	if w := h.volumeInfo("w"); w.State != string(store.VolumeDeleting) {
		t.Errorf("w after reconcile's DeleteVolume of its unusable answer was refused: %s (capacity %d, capacity_max %d); want deleting, not a volume to claim",
			w.State, w.CapacityBytes, w.RequestedMax)
	}
	h.reconcileLeavesNoVolume(t, "w", "once the plugin took the DeleteVolume")
}

// The honest side: a `volume delete` of a created volume the plugin refuses FAILED_PRECONDITION
// keeps it, ready, as before.
func TestDeleteRefusedOfACreatedVolumeStillKeepsItReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.FailedPrecondition, Times: 1})
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil || !strings.Contains(err.Error(), "kept, ready") {
		t.Fatalf("delete refused FAILED_PRECONDITION: %v; want the volume kept, ready", err)
	}
	if v := h.volumeInfo("v"); v.State != string(store.VolumeReady) {
		t.Errorf("v after its refused delete: %s; want ready", v.State)
	}
}

// The honest plugin beside hostile37's refusal: one that gives a new volume an ID a deleted
// volume had (ReuseIDs: a storage array's LUN numbers). Volume db, snapshotted, is deleted
// through volctl; a restore from its snapshot (the way back after that delete) is given db's
// old ID, free again. Before, the answer was refused as the snapshot's source ("restores in
// place or answers with the snapshot's source: report it to the plugin's authors, and check the
// source's data"), the restored volume left on the plugin, recorded nowhere, and the user told
// to check a source that no longer exists. The source is asked for first (the plugin's volume
// listing, under the controller lock CreateVolume is sent under): one the plugin no longer
// lists is not what the answer can be, and the restore is recorded. The plugin that does
// restore in place (the source still there, deregistered) is still refused:
// TestRestoreAnsweredWithItsSnapshotsSourceIsRefused.
func TestRestoreGivenItsDeletedSourcesFreedIDIsRecorded(t *testing.T) {
	t.Parallel()
	for _, recorded := range []bool{true, false} {
		name := map[bool]string{true: "recorded", false: "plugins-own"}[recorded]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, db := snapshotHarness(t, func(c *csitest.MemConfig) { c.ReuseIDs = true })
			snapID := "provider-snap"
			if recorded {
				snapID = h.snapshot("nightly").ID
			} else {
				h.mem.AddSnapshot(csi.Snapshot{ID: snapID, SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
			}
			if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
				t.Fatal(err)
			}
			sv := volume("r")
			sv.SnapshotID = snapID
			r, err := h.e.CreateVolume(h.ctx, sv)
			if err != nil {
				t.Fatalf("restore of deleted volume db's snapshot, given db's freed ID %q by a plugin that reuses IDs: %v", db.ExternalID, err)
			}
			if r.ExternalID != db.ExternalID || r.State != string(store.VolumeReady) {
				t.Errorf("restored volume r = %s %q; want ready, %q", r.State, r.ExternalID, db.ExternalID)
			}
			if mv, ok := h.mem.Volume(r.ExternalID); !ok || mv.SnapshotID != snapID {
				t.Errorf("the plugin holds %+v (%v) under r's ID; want the restore from %q", mv, ok, snapID)
			}
			h.deletesAsItsOwn("r", r.ExternalID)
		})
	}
}

// TestCreateCleanupOfAnUnusableAnswerPublishedElsewhereKeepsIt's plugin, whose listing fails
// (UNAVAILABLE at every ListVolumes): whether a node holds v's storage, the unusable answer to
// B's create of w, cannot be learnt. Before, the failure was logged and the DeleteVolume sent:
// a plugin that deletes a published volume deleted A's data from under its claim. Now nothing is
// sent: w stays marked deleting, its create's cleanup, and reconcile asks again, sending nothing
// while the listing fails; once the plugin answers, it finds v published and leaves it alone.
func TestCreateCleanupWhoseQuestionFailsSendsNoDeleteVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	a := h.otherStateDir()
	v, err := a.CreateVolume(h.ctx, volume("v"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerCreateWith(v.ExternalID)
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Code: codes.Unavailable})
	h.mem.ResetCalls()
	sv := volume("w")
	sv.CapacityMin = 1 << 40 // more than v's storage holds: the answer is unusable
	_, err = h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatal("create of w answered with v's storage, too small: succeeded")
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Fatalf("DeleteVolume sent %d time(s) for volume %q, published to node-1 by state dir A, whether a node held it unknown (B's create: %v)", n, v.ExternalID, err)
	}
	if !strings.Contains(err.Error(), "could not be checked") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("err = %v\nwant it to say the question could not be checked, and reconcile", err)
	}
	if w := h.volumeInfo("w"); w.State != string(store.VolumeDeleting) {
		t.Errorf("w after its cleanup's question failed: %s; want deleting, for reconcile", w.State)
	}
	_, _ = h.e.Reconcile(h.ctx)
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("reconcile sent DeleteVolume %d time(s) for volume %q while the question still failed", n, v.ExternalID)
	}
	h.faults.Reset()
	_, _ = h.e.Reconcile(h.ctx)
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("reconcile sent DeleteVolume %d time(s) for volume %q, published to node-1", n, v.ExternalID)
	}
	if _, ok := h.mem.Volume(v.ExternalID); !ok {
		t.Fatalf("the plugin deleted volume %q, state dir A's, published to node-1", v.ExternalID)
	}
	if w, err := h.e.Volume(h.ctx, "w"); err == nil && (w.State == string(store.VolumeReady) || w.ExternalID == v.ExternalID) {
		t.Errorf("w after reconcile: %s with %q; want A's storage recorded nowhere in B", w.State, w.ExternalID)
	}
}

// The honest side: a cleanup whose question fails once, of an unusable volume the create made,
// is finished by reconcile once the plugin answers.
func TestCreateCleanupWhoseQuestionFailedIsFinishedByReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30 })
	sv := volume("w")
	sv.CapacityMax = 1 << 20
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Code: codes.Unavailable})
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create answered past its capacity_max: succeeded")
	}
	h.faults.Reset()
	h.reconcileLeavesNoVolume(t, "w", "after reconcile")
}

// The common restore, of a snapshot of a volume volctl records, asks the plugin nothing of its
// source: the source recorded here is there as far as volctl knows (sourcesStillHeld). Since
// round 63 every create lists the plugin's volumes once after CreateVolume answered, where the
// plugin reports published nodes, to refuse an answer published to a node (another's volume:
// TestCreateAnsweredWithAnotherStateDirsPublishedVolumeIsNotRecorded); that one listing is
// the create's, so a restore sends one, not two.
func TestRestoreOfARecordedSourcesSnapshotAsksNoListing(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	snap := h.snapshot("nightly")
	h.mem.ResetCalls()
	sv := volume("r")
	sv.SnapshotID = snap.ID
	h.create(sv)
	if n := h.mem.CallCount(csi.RPCListVolumes); n != 1 {
		t.Errorf("restore of a recorded volume's snapshot sent ListVolumes %d time(s); want the create's one check of the answer's published nodes, and none for the source", n)
	}
	h.mem.ResetCalls()
	h.create(volume("plain"))
	if n := h.mem.CallCount(csi.RPCListVolumes); n != 1 {
		t.Errorf("a plain create sent ListVolumes %d time(s); want the one check of the answer's published nodes (the restore's count above is the same: none for its source)", n)
	}
}

// reconcileLeavesNoVolume runs reconcile and fails t unless volume id is gone, here and on the
// plugin (when is what the failure says happened before).
func (h *harness) reconcileLeavesNoVolume(t *testing.T, id, when string) {
	t.Helper()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Volume(h.ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("%s %s: %v; want it gone", id, when, err)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin still holds %+v", vols)
	}
}

// deletesAsItsOwn deletes restored volume name, made under the freed ID id of its snapshot's
// source, and checks it went: a volume of its own, whose delete is not refused as the delete
// of its snapshot's source (refuseDeleteOfItsSource), nor left on the plugin.
func (h *harness) deletesAsItsOwn(name, id string) {
	h.t.Helper()
	if err := h.e.DeleteVolume(h.ctx, name); err != nil {
		h.t.Fatalf("delete of restored volume %s, a volume of its own under the freed ID %q: %v", name, id, err)
	}
	if _, ok := h.mem.Volume(id); ok {
		h.t.Errorf("the plugin still holds %s's volume %q after its delete", name, id)
	}
}
