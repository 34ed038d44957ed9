package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A snapshot create of a NAME volctl recorded a snapshot under before gets that snapshot back
// from the plugin (CSI names make CreateSnapshot idempotent): nothing new is taken, and the
// outcome says so (Unchanged), with no second "created" event. Before, each run of a nightly
// script passing one fixed NAME was told "created" of the first night's snapshot, and the
// event log said it was taken again each night. A create without NAME, or of a NAME whose
// snapshot the plugin no longer has, takes a new one (Created).
func TestSnapshotCreateAgainSaysItExistsAlready(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	create := func(name string) (SnapshotInfo, SubmitOutcome) {
		t.Helper()
		s, outcome, err := h.e.CreateSnapshotOutcome(h.ctx, "db", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s, outcome
	}
	first, outcome := create("nightly")
	if outcome != Created {
		t.Fatalf("first create of nightly: outcome %v, want Created", outcome)
	}
	again, outcome := create("nightly")
	if outcome != Unchanged || again.ID != first.ID {
		t.Errorf("create of nightly again: %q, outcome %v; want %q, Unchanged", again.ID, outcome, first.ID)
	}
	if evs := h.eventsOf("snapshot-create", "db", "created"); len(evs) != 1 {
		t.Errorf("snapshot-create events after two creates of one NAME = %q, want the first alone", evs)
	}

	// No NAME: a new snapshot each time.
	for i := 0; i < 2; i++ {
		if s, outcome := create(""); outcome != Created || s.ID == first.ID {
			t.Errorf("create without NAME %d: %q, outcome %v; want a new snapshot, Created", i, s.ID, outcome)
		}
	}

	// The plugin lost nightly's snapshot (deleted outside volctl): the NAME takes a new one.
	// This plugin's IDs derive from the name: the new one has the old one's ID, and its
	// creation time tells it from the first.
	h.mem.DropSnapshot(first.ID)
	fresh, outcome := create("nightly")
	if outcome != Created || !fresh.CreatedAt.After(first.CreatedAt) {
		t.Errorf("create of nightly once its snapshot is gone: %q taken %v (the first %v), outcome %v; want a new snapshot, Created",
			fresh.ID, fresh.CreatedAt, first.CreatedAt, outcome)
	}

	// A plugin that gives no creation time: the ID recorded under the NAME is all there is
	// to go by, and the snapshot is taken for the one recorded.
	h.mem.AddSnapshot(csi.Snapshot{ID: "undated", SourceVolumeID: fresh.SourceExternalID, SizeBytes: 1 << 20, ReadyToUse: true})
	undated, outcome := create("undated")
	if outcome != Created {
		t.Fatalf("first create of undated: outcome %v, want Created", outcome)
	}
	if again, outcome := create("undated"); outcome != Unchanged || again.ID != undated.ID {
		t.Errorf("create of undated again: %q, outcome %v; want %q, Unchanged", again.ID, outcome, undated.ID)
	}
}
