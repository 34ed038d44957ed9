package engine

import (
	"strings"
	"testing"
	"time"

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

	// A plugin that dates it in the year 3000, which the store cannot keep (it records the
	// time of the record): the ID is all there is to go by, as without a date.
	h.mem.AddSnapshot(csi.Snapshot{ID: "far", SourceVolumeID: fresh.SourceExternalID, SizeBytes: 1 << 20, ReadyToUse: true,
		CreatedAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if _, outcome := create("far"); outcome != Created {
		t.Fatalf("first create of far: outcome %v, want Created", outcome)
	}
	if _, outcome := create("far"); outcome != Unchanged {
		t.Errorf("create of far again: outcome %v; want Unchanged", outcome)
	}
}

// A snapshot create the plugin answers with a snapshot volctl has no record of, which the
// plugin dates before the request (volctl forgot it, or it was made through another state
// dir), records it as one it held (Adopted), and its event says so; before, it said "created"
// of a snapshot three days old. One dated within a minute of the request (a plugin's clock a
// little off) is taken as made by it.
func TestSnapshotCreateAnsweredWithOneThePluginHeldSaysSo(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, nil) // the engine's clock: snapshotClock
	for _, tt := range []struct {
		name    string
		dated   time.Time
		outcome SubmitOutcome
		event   string
	}{
		{"old", snapshotClock.Add(-72 * time.Hour), Adopted, `recorded: the plugin held it under this name, dated 2025-02-26T12:00:00Z`},
		{"skewed", snapshotClock.Add(-30 * time.Second), Created, `of volume "db" created`},
	} {
		h.mem.AddSnapshot(csi.Snapshot{ID: tt.name, SourceVolumeID: db.ExternalID, SizeBytes: 1 << 20, ReadyToUse: true, CreatedAt: tt.dated})
		s, outcome, err := h.e.CreateSnapshotOutcome(h.ctx, "db", tt.name, nil)
		if err != nil || outcome != tt.outcome || s.ID != tt.name {
			t.Errorf("create of %s, which the plugin holds dated %v: %q, %v, %v; want %q, %v", tt.name, tt.dated, s.ID, outcome, err, tt.name, tt.outcome)
		}
		if evs := h.eventsOf("snapshot-create", "db", `"`+tt.name+`"`); len(evs) != 1 || !strings.Contains(evs[0], tt.event) {
			t.Errorf("create of %s: events %q, want one saying %q", tt.name, evs, tt.event)
		}
		// Recorded now: the same NAME again is the snapshot volctl has.
		if _, outcome, err := h.e.CreateSnapshotOutcome(h.ctx, "db", tt.name, nil); err != nil || outcome != Unchanged {
			t.Errorf("create of %s again: %v, %v; want Unchanged", tt.name, outcome, err)
		}
	}
}
