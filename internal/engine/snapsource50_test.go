package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestSnapshotListSaysASourceVolumeIsGone: a snapshot outlives its source's record (a volume
// deregistered, or deleted, keeps its snapshots), and `snapshot list` went on naming the source
// by its ID as if the volume were there, and so after the ID was registered again for other
// storage. SourceGone says so (the table's "db (gone)"); a source still recorded is not marked.
func TestSnapshotListSaysASourceVolumeIsGone(t *testing.T) {
	t.Parallel()
	h, sn := nightlySnapshot(t)
	gone := func(when string, want bool) {
		t.Helper()
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Snapshots {
			if s.ID == sn.ID {
				if s.SourceVolumeID != "db" || s.SourceGone != want {
					t.Errorf("%s: source %q, gone %v; want \"db\", gone %v", when, s.SourceVolumeID, s.SourceGone, want)
				}
				return
			}
		}
		t.Errorf("%s: snapshot %q not listed: %+v", when, sn.ID, list.Snapshots)
	}
	gone("its source registered", false)
	if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	gone("its source deregistered", true)
	h.mem.AddVolume(csi.Volume{ID: "ext-other", CapacityBytes: 1 << 20})
	sv := regSpec("db", 0)
	sv.PluginID, sv.ExternalID = "mem", "ext-other"
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	gone("its source's ID registered again for other storage", true)
}
