package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestDeleteSnapshotByItsNameDeletesIt: `volctl volume snapshot delete PLUGIN NAME` (the usage
// says SNAPSHOT_ID|NAME, and the README's tour deletes "nightly" so) of a ready snapshot
// deletes that snapshot. Before, the name went to the plugin as a snapshot ID nobody has, the
// plugin answered OK (a snapshot it does not know counts as deleted), and volctl said
// "deleted", exit 0, with the snapshot and its record still there.
func TestDeleteSnapshotByItsNameDeletesIt(t *testing.T) {
	t.Parallel()
	// IDs unlike names, as the hostpath plugin's (snap-<hex>) and most plugins' are.
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	s := h.snapshot("nightly")
	if s.ID == "nightly" {
		t.Fatalf("snapshot ID %q is its name: the test needs one that is not", s.ID)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "nightly", nil); err != nil {
		t.Fatalf("delete by name: %v", err)
	}
	if h.recordedSnapshot(s.ID) {
		t.Errorf("snapshot %s (name %q) is still recorded after its delete by name said it was deleted", s.ID, "nightly")
	}
	listed, err := h.pluginClient().ListSnapshots(h.ctx, csi.ListSnapshotsRequest{SnapshotID: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Snapshots) != 0 {
		t.Errorf("the plugin still has snapshot %s after its delete by name said it was deleted", s.ID)
	}
}
