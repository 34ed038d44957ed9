package store

import "testing"

// A snapshot's recorded delete (migration 0013's snapshot_deletes): marked whether the snapshot
// is recorded or not, marked twice is no change, per plugin, and forgotten by Undelete (none
// recorded is no error).
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
		if err := tx.Snapshots().MarkDeleting("hp", "s1"); err != nil {
			return err
		}
		return tx.Snapshots().MarkDeleting("hp", "s1")
	})
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
