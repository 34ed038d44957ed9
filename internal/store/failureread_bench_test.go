package store

import (
	"context"
	"testing"
)

// review31b: the read the engine's appendFailure makes before it records a failure met again
// (a deleting volume's delete, a create left for reconcile): the volume's newest 4 events of
// any kind, through events_volume (volume_id, id). The volume here is one whose own events fill
// the log (a volume claimed and released by a periodic job), none of the failure's kind: read
// by kind, as it was, every one of them was read to find none (3.5–5.2 ms a pass).
func BenchmarkFailureReadOnABusyVolume(b *testing.B) {
	benchEventRead(b, fullEventLog(b, "v", "mem"), 4, EventFilter{VolumeID: "v"})
}

// The same log, every event on another volume: the read a failure of a quiet volume makes.
func BenchmarkFailureReadOnAQuietVolume(b *testing.B) {
	benchEventRead(b, fullEventLog(b, "w", "mem"), 4, EventFilter{VolumeID: "v"})
}

// fix31b: the read a probe that found a plugin's health unchanged makes (the engine's
// healthSinceEvent): the plugin's newest health event. The events table has no index by plugin:
// on a full log none of whose events is the plugin's (the worst case), every row is read.
func BenchmarkNewestHealthEventOnAFullLog(b *testing.B) {
	benchEventRead(b, fullEventLog(b, "v", "other"), 1, EventFilter{Kind: "plugin-health", PluginID: "mem"})
}

// fullEventLog is a store whose event log holds 10,000 claims and releases of volume vol
// through plugin plugin.
func fullEventLog(b *testing.B, vol, plugin string) *Store {
	s := newStore(b)
	if err := s.Update(context.Background(), func(tx *Tx) error {
		for i := range 10000 {
			kind := "claim"
			if i%2 == 1 {
				kind = "release"
			}
			if err := tx.Events().Append(&Event{Kind: kind, VolumeID: vol, PluginID: plugin, Message: "claimed by alloc web-0 on node-1"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchEventRead measures Recent(limit, f) on s, each in its own write transaction as the
// engine reads it before it appends.
func benchEventRead(b *testing.B, s *Store, limit int, f EventFilter) {
	b.ResetTimer()
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		if err := s.Update(context.Background(), func(tx *Tx) error {
			_, err := tx.Events().Recent(limit, f)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
