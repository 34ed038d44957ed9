package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A store opened read-only (a read-only bind of the state dir) knows the file it opened:
// CheckFile said it was replaced at every call, the file's ID never recorded, and a dashboard
// or `events --follow` there failed at each read, a restart no help. A file put in its place
// is still found replaced. Found by helper review74 (TestDashboardOnAReadOnlyBindOfTheStateDirReadsTheState).
func TestReadOnlyStoreChecksTheFileItOpened(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLeftForExit(w)
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	if err := w.CloseAtExit(); err != nil { // the WAL stays: not opened immutable
		t.Fatal(err)
	}
	s, err := Open(context.Background(), readOnlyView(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckFile(); err != nil {
		t.Fatalf("CheckFile of a read-only store just opened: %v", err)
	}
	// Another file at the path (a backup restored over it), through the writable path.
	replaceWithACopy(t, filepath.Join(dir, FileName))
	if err := s.CheckFile(); !errors.Is(err, ErrReplaced) {
		t.Errorf("CheckFile of a read-only store whose file was replaced: %v, want ErrReplaced", err)
	}
}

// A store opened read-only and immutable (no WAL) that follows a file put at its path, opened
// again by readPool, checks the new file: once a writer left a WAL on it, the store read it,
// and the next CheckFile said the state was replaced (the first file's ID kept). Found by
// helper review74 (the own review of the change above).
func TestReadOnlyStoreThatFollowedAReplacedFileChecksTheNewOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	if err := w.Close(); err != nil { // checkpointed, the WAL removed: opened immutable below
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("premise: no WAL after the writer closed: %v", err)
	}
	s, err := Open(context.Background(), readOnlyView(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Another file put at the path, and a writer leaving a WAL on it.
	replaceWithACopy(t, path)
	w2, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLeftForExit(w2)
	update(t, w2, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	if err := w2.CloseAtExit(); err != nil { // the WAL stays
		t.Fatal(err)
	}
	if got := eventKinds(t, s); len(got) != 2 {
		t.Fatalf("events read through the read-only store after the file was replaced and written: %q, want both", got)
	}
	if err := s.CheckFile(); err != nil {
		t.Errorf("CheckFile of a read-only store reading the file now at its path: %v", err)
	}
}

// replaceWithACopy puts a copy of the file at path in its place, as a backup restored over it:
// the same bytes, another file.
func replaceWithACopy(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}
