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
