package store

import (
	"context"
	"path/filepath"
	"testing"
)

// A View (and ViewShort, on the write connection) takes its snapshot before fn runs (begin's
// snapshotQuery, `PRAGMA schema_version` since perf33): another process's commit made after
// that, before fn's first read, is not seen, nor one made between two of fn's reads: fn sees
// the state as it was at one moment, never a commit's writes in part or after its first look.
// A snapshot query SQLite answered without a read transaction (`SELECT 1`) would leave the
// snapshot to fn's first read, which would see the first commit here (chaos34; round 33's
// review asked for it).
func TestViewSeesNoForeignCommitMadeAfterItsSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	a, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dir) // another volctl process: its own connections
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	count := func(tx *Tx) int {
		t.Helper()
		evs, err := tx.Events().Recent(0, EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	commitTwo := func() {
		t.Helper()
		update(t, b, func(tx *Tx) error {
			for range 2 {
				if err := tx.Events().Append(&Event{Kind: "test", Message: "a foreign commit"}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// ViewShort first: it reads on the write connection only while no read connection is open.
	for _, v := range []struct {
		name string
		view func(context.Context, func(*Tx) error) error
	}{{"ViewShort", a.ViewShort}, {"View", a.View}} {
		var before int
		view(t, b, func(tx *Tx) error { before = count(tx); return nil })
		if err := v.view(ctx, func(tx *Tx) error {
			commitTwo() // after the snapshot, before fn's first read
			if n := count(tx); n != before {
				t.Errorf("%s: %d events at its first read, %d at its snapshot: it saw another process's commit made after it began", v.name, n, before)
			}
			commitTwo() // between two reads
			if n := count(tx); n != before {
				t.Errorf("%s: %d events at its second read, %d at its snapshot", v.name, n, before)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		var after int
		view(t, a, func(tx *Tx) error { after = count(tx); return nil })
		if after != before+4 {
			t.Errorf("%s: a View after both commits sees %d events, want %d", v.name, after, before+4)
		}
	}
}
