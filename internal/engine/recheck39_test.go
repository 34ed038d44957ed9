package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// recheck38's leftover: TestRestoreGivenItsDeletedSourcesFreedIDIsRecorded's restore, given
// deleted volume db's freed ID by a plugin that reuses IDs, killed once CreateVolume answered
// and before the answer was recorded (rpc:CreateVolume). Reconcile sends the restore again
// (CSI's idempotency by name: the plugin answers with the volume it made, under db's old ID).
// Before, the source was asked again before that send: the plugin listed db's old ID, the
// restore's own volume now, and the answer was refused as the snapshot's source, the restored
// volume left on the plugin recorded nowhere. The source found gone before the first
// CreateVolume stays gone for the sends that follow (the restore's record keeps it).
func TestRestoreGivenAFreedIDWhoseAnswerWasLostIsRecordedByReconcile(t *testing.T) {
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
			killedAt(h, "rpc:CreateVolume", func() { _, _ = h.e.CreateVolume(h.ctx, sv) })
			if _, ok := h.mem.Volume(db.ExternalID); !ok {
				t.Fatalf("the plugin holds no volume under db's freed ID %q after the restore's CreateVolume", db.ExternalID)
			}
			_, rerr := h.e.Reconcile(h.ctx)
			r, err := h.e.Volume(h.ctx, "r")
			if err != nil {
				t.Fatalf("r after reconcile (%v): %v", rerr, err)
			}
			if r.ExternalID != db.ExternalID || r.State != string(store.VolumeReady) {
				t.Fatalf("restored volume r after reconcile sent its lost CreateVolume again = %s %q (reconcile: %v); want ready, %q: the plugin's restore under db's freed ID",
					r.State, r.ExternalID, rerr, db.ExternalID)
			}
			if err := h.e.DeleteVolume(h.ctx, "r"); err != nil {
				t.Fatalf("delete of restored volume r, a volume of its own under the freed ID %q: %v", r.ExternalID, err)
			}
			if _, ok := h.mem.Volume(r.ExternalID); ok {
				t.Errorf("the plugin still holds r's volume %q after its delete", r.ExternalID)
			}
		})
	}
}

// hostile38's leftover: a plugin that answers NodeUnstageVolume OK and leaves the staging
// mounted. The release stops on it, and the staging is recorded not staged (the plugin
// disowned it), while the mount is still there. Before, `volume status` said "Staged: no" and
// nothing of the mount: the reader, told the volume is on no path of this host, had the
// claim's error alone to say otherwise. Now the view names the staging path still mounted
// (VolumeInfo.StagingLeft), read from the mount table only for a staging recorded unfinished;
// once it is unmounted and reconcile finishes the release, it is gone.
func TestStatusOfAStagingLeftMountedByNodeUnstageNamesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	staging, _ := h.staging("v")
	if v := h.volumeInfo("v"); !v.Staged || v.StagingLeft != "" {
		t.Fatalf("v claimed: staged %v, staging left %q; want staged, nothing left", v.Staged, v.StagingLeft)
	}
	heal := h.serveLeavingMounts(csi.RPCNodeUnstageVolume)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
		t.Fatal("release through a plugin that leaves the staging mounted: succeeded")
	}
	v := h.volumeInfo("v")
	if v.Staged || v.StagingLeft != staging.StagingPath {
		t.Errorf("v after NodeUnstageVolume answered OK and left %s mounted: staged %v, staging left %q; want not staged, and that path named",
			staging.StagingPath, v.Staged, v.StagingLeft)
	}
	heal()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the staging is unmounted: %v", err)
	}
	if v := h.volumeInfo("v"); v.Staged || v.StagingLeft != "" {
		t.Errorf("v after reconcile finished the release: staged %v, staging left %q; want neither", v.Staged, v.StagingLeft)
	}
}
