package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDurabilityLevels: Update commits with synchronous=FULL (forced to disk), UpdateProgress
// with NORMAL (left to the next durable commit), switching the one write connection as needed.
func TestDurabilityLevels(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	base := s.Stats() // creating the schema was one durable commit
	level := func(run func(context.Context, func(*Tx) error) error) int {
		t.Helper()
		var n int
		if err := run(ctx, func(tx *Tx) error { return tx.queryRow("PRAGMA synchronous").Scan(&n) }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const normal, full = 1, 2
	for i, tt := range []struct {
		name string
		run  func(context.Context, func(*Tx) error) error
		want int
	}{
		{"Update", s.Update, full},
		{"UpdateProgress", s.UpdateProgress, normal},
		{"UpdateProgress again", s.UpdateProgress, normal},
		{"Update after progress", s.Update, full},
	} {
		if got := level(tt.run); got != tt.want {
			t.Fatalf("%d %s: synchronous = %d, want %d", i, tt.name, got, tt.want)
		}
	}
	// Stats counts commits by kind; a transaction rolled back is not counted as a commit, but as
	// rolled back when it was a write's (a read's has nothing to undo).
	_ = s.View(ctx, func(*Tx) error { return nil })
	_ = s.View(ctx, func(*Tx) error { return errors.New("a read that failed") })
	_ = s.Update(ctx, func(*Tx) error { return errors.New("rolled back") })
	want := Stats{Reads: base.Reads + 1, DurableWrites: base.DurableWrites + 2, ProgressWrites: base.ProgressWrites + 2,
		RolledBack: base.RolledBack + 1}
	if got := s.Stats(); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
	// What UpdateProgress commits is committed: visible to a new store on the same file.
	update := func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "test", Message: "progress"}) }
	if err := s.UpdateProgress(ctx, update); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var evs []Event
	if err := other.View(ctx, func(tx *Tx) error {
		var err error
		evs, err = tx.Events().Recent(1, EventFilter{Kind: "test"})
		return err
	}); err != nil || len(evs) != 1 {
		t.Fatalf("progress commit not visible to another store: %v %v", evs, err)
	}
}

// TestWriteConnectionWaitsInGoOnly: the write connection has no busy handler of SQLite's (a
// writer waits for another process's lock in retryBusy, which a cancelled context ends), and
// its DSN does not set one to 0, which SQLite's connection is at already: that PRAGMA was a
// statement every writing process prepared and ran at its connection's open for nothing. The
// read connections wait in SQLite, up to the busy timeout.
func TestWriteConnectionWaitsInGoOnly(t *testing.T) {
	if d := dsn("/state/volctl.db", time.Second, false); strings.Contains(d, "busy_timeout") {
		t.Errorf("the write connection's DSN %s sets a busy timeout; want none (SQLite's default: no busy handler)", d)
	}
	s := newStore(t)
	ctx := context.Background()
	var w, r int
	if err := s.Update(ctx, func(tx *Tx) error { return tx.queryRow("PRAGMA busy_timeout").Scan(&w) }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(tx *Tx) error { return tx.queryRow("PRAGMA busy_timeout").Scan(&r) }); err != nil {
		t.Fatal(err)
	}
	if w != 0 || int64(r) != s.busyTimeout.Milliseconds() || r == 0 {
		t.Errorf("busy timeouts: write connection %d ms, read connection %d ms; want 0 and %d", w, r, s.busyTimeout.Milliseconds())
	}
}
