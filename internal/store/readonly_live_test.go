package store

import (
	"context"
	"testing"
)

// A read-only view of a state dir opened while no volctl had it open (no WAL: the file held
// every commit) stays open, as a dashboard does, while volctl writes through the writable path:
// what they commit is read, as it is when the view was opened with a WAL there. Opened
// immutable, SQLite would read neither the WAL they write nor, with any certainty, the database
// file they checkpoint into under it.
func TestReadOnlyViewOpenedWithoutWALReadsLaterWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	openAndAppend(t, dir, "first").Close()
	s, err := Open(context.Background(), readOnlyView(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := eventKinds(t, s); len(got) != 1 {
		t.Fatalf("events = %q, want the one committed", got)
	}

	w2 := openAndAppend(t, dir, "second")
	if got := eventKinds(t, s); len(got) != 2 || got[0] != "second" {
		t.Errorf("events read on the read-only view while a writer has the database open = %q, want second and first", got)
	}
	w2.Close()
	if got := eventKinds(t, s); len(got) != 2 || got[0] != "second" {
		t.Errorf("events read on the read-only view after the writer closed = %q, want second and first", got)
	}
	openAndAppend(t, dir, "third").Close()
	if got := eventKinds(t, s); len(got) != 3 || got[0] != "third" {
		t.Errorf("events read on the read-only view after a second writer = %q, want third, second and first", got)
	}

	// Opened without a WAL, and written only by a writer that closed before the next View
	// (a command: it checkpoints into the database file and removes the WAL): read too.
	s2, err := Open(context.Background(), readOnlyView(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := eventKinds(t, s2); len(got) != 3 {
		t.Fatalf("events = %q, want the three committed", got)
	}
	openAndAppend(t, dir, "fourth").Close()
	if got := eventKinds(t, s2); len(got) != 4 || got[0] != "fourth" {
		t.Errorf("events read on a read-only view after a command wrote and closed = %q, want four, fourth first", got)
	}
}

// openAndAppend opens the store in dir, appends an event of kind, and returns the store open.
func openAndAppend(t *testing.T, dir, kind string) *Store {
	t.Helper()
	w, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: kind}) })
	return w
}
