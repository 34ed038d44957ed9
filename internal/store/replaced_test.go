package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The database file replaced under a running volctl (a copy of it moved over it, as a restore
// does): the process's next write is refused, naming the file and what to do, rather than
// committed into the old file, where a checkpoint (here: the close's) takes it out of the state
// every other volctl reads. Nothing it reported committed is lost.
func TestWriteAfterTheDatabaseFileWasReplaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "before"}) })
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if err == nil {
		err = os.WriteFile(path+".restored", b, 0o600)
	}
	if err == nil {
		err = os.Rename(path+".restored", path)
	}
	if err != nil {
		t.Fatal(err)
	}

	// Enough writes for SQLite to checkpoint (walAutocheckpoint) and restart the WAL.
	committed := []string{"before"}
	var err1 error
	for i := range 30 {
		err := s.Update(context.Background(), tenPages)
		if err != nil {
			if i == 0 {
				err1 = err
			}
			continue
		}
		for range 10 {
			committed = append(committed, "k")
		}
	}
	if err1 == nil {
		t.Errorf("Update after the database file was replaced under the store succeeded")
	} else if !errors.Is(err1, ErrReplaced) || !strings.Contains(err1.Error(), path) || !strings.Contains(err1.Error(), "restart") {
		t.Errorf("Update after the database file was replaced: %v, want ErrReplaced naming %s and what to do", err1, path)
	}
	if err := s.View(context.Background(), func(tx *Tx) error { return nil }); err != nil {
		t.Errorf("View after the database file was replaced: %v, want it to read", err)
	}
	s.Close()

	s2, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got := eventKinds(t, s2)
	slices.Reverse(got)
	if !slices.Equal(got, committed) {
		t.Errorf("events after the replaced file's store closed: %d, want every one committed: %d", len(got), len(committed))
	}
}
