package store

import (
	"fmt"
	"slices"
	"testing"
)

// A snapshot's recorded delete (migration 0013's snapshot_deletes): marked whether the snapshot
// is recorded or not, marked twice is no change, per plugin, and forgotten by Undelete (none
// recorded is no error); ListDeleting lists them in order.
func TestSnapshotDeleteMarks(t *testing.T) {
	s := newStore(t)
	deleting := func(plugin, id string) bool {
		t.Helper()
		var got bool
		view(t, s, func(tx *Tx) error {
			var err error
			got, err = tx.Snapshots().Deleting(plugin, id)
			return err
		})
		return got
	}
	update(t, s, func(tx *Tx) error {
		if already, err := tx.Snapshots().MarkDeleting("hp", "s1"); err != nil || already {
			return fmt.Errorf("first mark: already %v, %v; want a new mark", already, err)
		}
		if already, err := tx.Snapshots().MarkDeleting("hp", "s1"); err != nil || !already {
			return fmt.Errorf("second mark: already %v, %v; want it marked already", already, err)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error { _, err := tx.Snapshots().MarkDeleting("a", "s0"); return err })
	var listed []SnapshotDelete
	view(t, s, func(tx *Tx) error {
		var err error
		listed, err = tx.Snapshots().ListDeleting()
		return err
	})
	var ids []string
	for _, d := range listed {
		ids = append(ids, d.PluginID+"/"+d.SnapshotID)
		if d.CreatedAt.IsZero() {
			t.Errorf("ListDeleting: %s/%s has no time, want when its delete was recorded", d.PluginID, d.SnapshotID)
		}
	}
	if want := []string{"a/s0", "hp/s1"}; !slices.Equal(ids, want) {
		t.Fatalf("ListDeleting: %+v, want %q", listed, want)
	}
	update(t, s, func(tx *Tx) error { return tx.Snapshots().Undelete("a", "s0") })
	if !deleting("hp", "s1") || deleting("other", "s1") || deleting("hp", "s2") {
		t.Fatalf("marks: hp/s1 %v, other/s1 %v, hp/s2 %v; want only hp/s1", deleting("hp", "s1"), deleting("other", "s1"), deleting("hp", "s2"))
	}
	update(t, s, func(tx *Tx) error {
		if err := tx.Snapshots().Undelete("hp", "s1"); err != nil {
			return err
		}
		return tx.Snapshots().Undelete("hp", "s1")
	})
	if deleting("hp", "s1") {
		t.Fatal("hp/s1 still marked deleting after Undelete")
	}
}
