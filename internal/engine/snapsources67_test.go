package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestSnapshotListedWithAnotherSourceSpellingIsNotSourceGone: a recorded snapshot whose
// recorded source volume "db" is still recorded, as the very storage the snapshot was taken of,
// is listed by the plugin with its source_volume_id spelled otherwise (another case: a plugin
// that canonicalises IDs in its listing). SourceGone's promise (the source marked gone when it
// names no volume volctl records now, or one of other storage) did not hold: db records the
// very storage the snapshot was taken of, yet the listing said "db (gone)". A spelling
// spec.SameStorageID takes for the same is the same now. Found by helper review67.
func TestSnapshotListedWithAnotherSourceSpellingIsNotSourceGone(t *testing.T) {
	t.Parallel()
	h, sn := nightlySnapshot(t)
	if sn.SourceExternalID == "" {
		t.Fatalf("no source external ID recorded: %+v", sn)
	}
	listed := csi.Snapshot{ID: sn.ID, SourceVolumeID: strings.ToUpper(sn.SourceExternalID), SizeBytes: sn.SizeBytes, ReadyToUse: true, CreatedAt: sn.CreatedAt}
	h.mem.AddSnapshot(listed)
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Snapshots {
		if s.ID != sn.ID {
			continue
		}
		t.Logf("listed: source %q (external %q), gone %v, recorded %v", s.SourceVolumeID, s.SourceExternalID, s.SourceGone, s.Recorded)
		if s.SourceVolumeID == "db" && s.SourceGone {
			t.Errorf("snapshot %q listed with source \"db\" marked gone, though volume db is recorded with storage %q, the snapshot's recorded source (listing said %q)",
				sn.ID, sn.SourceExternalID, listed.SourceVolumeID)
		}
		return
	}
	t.Fatalf("snapshot %q not listed: %+v", sn.ID, list.Snapshots)
}

// TestSourceDeleteRefusedWhileACloneThroughASocketMateIsInFlight: volume "src" is
// recorded through plugin "mem"; "mem2" is registered on the same socket (one process, one
// storage: socketMates). A clone of src's storage through mem2 (clone_id = src's external ID)
// is cut short (CreateVolume unavailable), its intent recorded. The delete of src through mem
// is refused as refuseCloneInFlight refuses it for a clone through mem itself, and as
// refuseRestoreInFlight does for a restore through a mate. refuseCloneInFlight listed the
// creating volumes of v.PluginID alone: the delete went on, and the clone's replay was NOT_FOUND
// for its source at every reconcile pass for good. Found by helper review67.
func TestSourceDeleteRefusedWhileACloneThroughASocketMateIsInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	src := h.create(volume("src"))
	h.registerPlugin("mem2", h.socket)
	sv := volume("clone")
	sv.PluginID = "mem2"
	sv.CloneID = src.ExternalID
	h.interrupted(csi.RPCCreateVolume, "clone through mem2", func() error { _, err := h.e.CreateVolume(h.ctx, sv); return err })
	if got := h.volumeInfo("clone").State; got != string(store.VolumeCreating) {
		t.Fatalf("clone after the interrupted create: %s; want creating", got)
	}
	calls := h.mem.CallCount(csi.RPCDeleteVolume)
	err := h.e.DeleteVolume(h.ctx, "src")
	if err == nil || !errors.Is(err, ErrConflict) {
		t.Errorf("delete of src while its clone through socket mate mem2 is being created: %v; want a conflict naming volume \"clone\"", err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != calls {
		t.Errorf("DeleteVolume sent for src (%d calls) under the clone in flight", n-calls)
	}
	if _, cerr := h.e.CreateVolume(h.ctx, sv); cerr != nil {
		t.Errorf("the clone's create run again, as its error advised: %v", cerr)
	}
}

// TestCloneThroughASocketMateOfASourceBeingDeletedIsRefused: the other way round, as
// cloneSource refuses a clone naming, by storage ID, a volume of its plugin being deleted
// (TestCloneByStorageIDOfAVolumeBeingDeletedIsRefused): src's delete through mem is cut short
// (recorded deleting), and a clone of src's storage through mem2, a plugin ID on the same
// socket, was recorded and sent; reconcile then finished src's delete, the clone's source gone
// under it. Refused now, as through mem itself. Found by helper review67.
func TestCloneThroughASocketMateOfASourceBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	src := h.create(volume("src"))
	h.registerPlugin("mem2", h.socket)
	h.interrupted(csi.RPCDeleteVolume, "delete", func() error { return h.e.DeleteVolume(h.ctx, "src") })
	if got := h.volumeInfo("src").State; got != string(store.VolumeDeleting) {
		t.Fatalf("source after the interrupted delete: %s; want deleting", got)
	}
	sv := volume("clone")
	sv.PluginID = "mem2"
	sv.CloneID = src.ExternalID
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) {
		t.Errorf("clone through mem2 of src's storage while src's delete through mem is recorded: %v; want a conflict naming src being deleted", err)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != calls {
		t.Errorf("CreateVolume sent for the clone of a source being deleted")
	}
}

// TestSnapshotDeleteRefusedWhileARestoreFromItsNearSpellingIsInFlight: on a plugin
// that reads IDs regardless of case (FoldIDs), a restore whose snapshot_id is the recorded
// snapshot's ID in another case is the restore of that snapshot. Cut short (CreateVolume
// unavailable), its intent is recorded; the delete of the snapshot must be refused as
// refuseRestoreInFlight refuses it for the exact ID (the rule spec.SameStorageID applies
// everywhere else a near spelling can name a snapshot: refuseNearSnapshotDelete). It compares
// v.SnapshotID == snapshotID exactly: DeleteSnapshot was sent, and the restore's replay
// answered NOT_FOUND at every reconcile pass. Found by helper review67.
func TestSnapshotDeleteRefusedWhileARestoreFromItsNearSpellingIsInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-"; c.FoldIDs = true })
	h.create(volume("db"))
	sn, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	sv := volume("restored")
	sv.SnapshotID = strings.ToUpper(sn.ID)
	h.interrupted(csi.RPCCreateVolume, "restore", func() error { _, err := h.e.CreateVolume(h.ctx, sv); return err })
	if got := h.volumeInfo("restored").State; got != string(store.VolumeCreating) {
		t.Fatalf("restore after the interrupted create: %s; want creating", got)
	}
	calls := h.mem.CallCount(csi.RPCDeleteSnapshot)
	_, err = h.e.DeleteSnapshotNoted(h.ctx, "mem", sn.ID, nil)
	if !errors.Is(err, ErrConflict) {
		t.Errorf("delete of snapshot %q while volume \"restored\" is being restored from %q: %v; want a conflict naming the restore", sn.ID, sv.SnapshotID, err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != calls {
		t.Errorf("DeleteSnapshot sent under the restore in flight")
	}
}
