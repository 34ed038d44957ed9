package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state database that is a symlink, to a database elsewhere or to nothing, is refused by
// name and nothing is opened or made: SQLite resolves the link and keeps its -wal and -shm
// beside the target, where Open's checks of the state dir's log (one without its database,
// another database's, their owner) never look, and two state dirs linking one database share
// it without sharing their locks. Before, a linked database was opened as if it were the
// state dir's own, and a dangling link was followed to create a database where it pointed.
func TestOpenRefusesASymlinkedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	real := filepath.Join(elsewhere, "real.db")
	db := filepath.Join(dir, FileName)
	if err := os.Rename(db, real); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(db + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	before, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(elsewhere, "gone.db")
	for _, target := range []string{real, gone} {
		if err := os.Remove(db); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.Symlink(target, db); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, dir)
		if err == nil {
			s.Close()
			t.Fatalf("state database %s, a symlink to %s, was opened", db, target)
		}
		for _, want := range []string{db, "is a symlink", target, "nothing was opened"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal of a symlink to %s: %q does not say %q", target, err, want)
			}
		}
	}
	if after, err := os.ReadFile(real); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the linked database changed (%v)", err)
	}
	for _, p := range []string{real + "-wal", real + "-shm", gone} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was made through the symlink (%v)", p, err)
		}
	}
}
