package engine

import (
	"testing"
)

// TestListSnapshotsThroughASocketMateNamesTheIDThatRecordsIt: two plugin IDs registered on one
// socket (one process, one storage) both list the snapshot one of them recorded. Under the
// other ID it was shown as a snapshot volctl does not record (no name, no volume), which its
// delete there was refused for (notMatesSnapshot) without the listing saying why: it names
// the ID that records it, with the record's name and volume.
func TestListSnapshotsThroughASocketMateNamesTheIDThatRecordsIt(t *testing.T) {
	h, _ := snapshotHarness(t, nil)
	snap := h.snapshot("nightly")
	h.registerPlugin("mem2", h.socket)

	for _, id := range []string{"mem2", ""} {
		list, err := h.e.ListSnapshots(h.ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		var under []SnapshotInfo
		for _, s := range list.Snapshots {
			if s.ID == snap.ID {
				under = append(under, s)
			}
		}
		for _, s := range under {
			switch s.PluginID {
			case "mem":
				if !s.Recorded || s.RecordedBy != "" {
					t.Errorf("list %q: under the ID that records it: %+v", id, s)
				}
			case "mem2":
				if s.Recorded || s.RecordedBy != "mem" || s.Name != "nightly" || s.SourceVolumeID != "db" || !s.Listed {
					t.Errorf("list %q: under its socket mate the snapshot is %+v, want it listed, not recorded by mem2, recorded by mem as nightly of db", id, s)
				}
			default:
				t.Errorf("list %q: under plugin %q: %+v", id, s.PluginID, s)
			}
		}
		if want := map[string]int{"mem2": 1, "": 2}[id]; len(under) != want {
			t.Errorf("list %q: snapshot %q shown %d times, want %d: %+v", id, snap.ID, len(under), want, under)
		}
	}
}
