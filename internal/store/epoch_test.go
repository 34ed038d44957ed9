package store

import (
	"testing"
	"time"
)

// A snapshot recorded as made at 1970-01-01T00:00:00Z, the time the store keeps as 0, "none":
// it read back with no creation time at all, where a plugin's missing or unstorable one is
// recorded as the time volctl recorded it. The epoch is recorded so too.
func TestSnapshotMadeAtTheEpochIsRecordedWithTheTimeRecorded(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return tx.Snapshots().Put(&Snapshot{PluginID: "hp", SnapshotID: "s1", CreatedAt: time.Unix(0, 0).UTC()})
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Snapshots().Get("hp", "s1")
		if err != nil {
			return err
		}
		if got.CreatedAt.IsZero() || got.CreatedAt.Equal(time.Unix(0, 0)) {
			t.Errorf("snapshot made at the epoch recorded as created at %v, want the time it was recorded", got.CreatedAt)
		}
		return nil
	})
}
