package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnlyView bind-mounts dir read-only at a new directory, unmounted when the test ends, and
// skips, saying why, where mounting is not allowed.
func readOnlyView(t *testing.T, dir string) string {
	t.Helper()
	ro := t.TempDir()
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount a state dir read-only: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(ro, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", ro, err)
		}
	})
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to remount a bind read-only: %v", err)
	}
	return ro
}

// TestStateDirToMakeOnAReadOnlyFileSystem: a state dir not made yet on a read-only file system
// is refused saying so and what to do; mkdir's "read-only file system" was all it said.
func TestStateDirToMakeOnAReadOnlyFileSystem(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(readOnlyView(t, t.TempDir()), "state")
	_, err := Open(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "mounted read-only: give a state dir on a writable one with --state-dir or VOLCTL_STATE_DIR") {
		t.Errorf("Open of %s to make on a read-only file system: %v, want it named with what to do", dir, err)
	}
}

// eventKinds is the kinds of the events in s, oldest first.
func eventKinds(t *testing.T, s *Store) []string {
	t.Helper()
	var kinds []string
	for _, e := range allEvents(t, s) {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// A state dir on a read-only file system opens for reading. What the last writer left in the
// WAL (a command's exit leaves it) is read, and so is what a writer reaching the same files
// through a writable path commits later; every write fails with ErrReadOnlyFS naming the
// directory, and nothing in it changes.
func TestOpenOnAReadOnlyFileSystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLeftForExit(w)
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	if err := w.CloseAtExit(); err != nil { // the WAL stays, with the commit in it
		t.Fatal(err)
	}
	ro := readOnlyView(t, dir)

	s, err := Open(context.Background(), ro)
	if err != nil {
		t.Fatalf("Open on a read-only file system: %v", err)
	}
	defer s.Close()
	if got := eventKinds(t, s); len(got) != 1 || got[0] != "first" {
		t.Errorf("events read on the read-only file system = %q, want the one left in the WAL", got)
	}
	for name, write := range map[string]func(context.Context, func(*Tx) error) error{
		"Update": s.Update, "UpdateProgress": s.UpdateProgress, "TryUpdateProgress": s.TryUpdateProgress,
	} {
		err := write(context.Background(), func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "ro"}) })
		if !errors.Is(err, ErrReadOnlyFS) || !strings.Contains(err.Error(), ro) {
			t.Errorf("%s on a read-only file system: %v, want ErrReadOnlyFS naming %s", name, err, ro)
		}
	}

	// A writer through the writable path: the read-only store reads it, WAL and all.
	w2, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	update(t, w2, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	if got := eventKinds(t, s); len(got) != 2 || got[0] != "second" {
		t.Errorf("events read on the read-only file system after a write through the writable path = %q, want second and first (newest first)", got)
	}
}

// Without a WAL (the last process closed the database) the file holds every commit and is
// read as it is; a WAL without its -shm cannot be read there and is refused, naming what to do,
// not opened as if the database file held everything. A database older than the binary cannot
// be migrated there, and a state dir without one cannot be made.
func TestOpenOnAReadOnlyFileSystemWithoutWALOrIndex(t *testing.T) {
	t.Parallel()
	closed := t.TempDir()
	w, err := Open(context.Background(), closed)
	if err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	w.Close()
	if _, err := os.Stat(filepath.Join(closed, FileName+"-wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("WAL after Close: %v, want it gone", err)
	}
	s, err := Open(context.Background(), readOnlyView(t, closed))
	if err != nil {
		t.Fatalf("Open of a closed database on a read-only file system: %v", err)
	}
	if got := eventKinds(t, s); len(got) != 1 {
		t.Errorf("events = %q, want the one committed", got)
	}
	s.Close()

	noIndex := t.TempDir()
	w, err = Open(context.Background(), noIndex)
	if err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	w.CloseAtExit()
	closeLeftForExit(w)
	// closeLeftForExit closed the last connection: SQLite checkpointed and removed the WAL.
	// Put a WAL with a commit back, without its -shm, as a copy of db and WAL alone would be.
	w, err = Open(context.Background(), noIndex)
	if err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	w.CloseAtExit()
	path := filepath.Join(noIndex, FileName)
	db, _ := os.ReadFile(path)
	wal, _ := os.ReadFile(path + "-wal")
	closeLeftForExit(w)
	if len(wal) <= walHeaderSize {
		t.Fatalf("WAL of %d bytes, want a commit in it", len(wal))
	}
	copyDir := t.TempDir()
	os.WriteFile(filepath.Join(copyDir, FileName), db, 0o600)
	os.WriteFile(filepath.Join(copyDir, FileName+"-wal"), wal, 0o600)
	ro := readOnlyView(t, copyDir)
	if s, err := Open(context.Background(), ro); err == nil {
		s.Close()
		t.Errorf("Open of a WAL without its -shm on a read-only file system succeeded")
	} else if !errors.Is(err, ErrReadOnlyFS) || !strings.Contains(err.Error(), ro) || !strings.Contains(err.Error(), FileName+"-shm") {
		t.Errorf("Open of a WAL without its -shm on a read-only file system: %v", err)
	}

	older := t.TempDir()
	o, err := open(context.Background(), older, SchemaVersion()-1)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if s, err := Open(context.Background(), readOnlyView(t, older)); err == nil {
		s.Close()
		t.Errorf("Open of an older schema on a read-only file system succeeded")
	} else if !errors.Is(err, ErrReadOnlyFS) || !strings.Contains(err.Error(), "cannot be migrated") {
		t.Errorf("Open of an older schema on a read-only file system: %v", err)
	}

	if s, err := Open(context.Background(), readOnlyView(t, t.TempDir())); err == nil {
		s.Close()
		t.Errorf("Open of an empty read-only directory succeeded")
	} else if !errors.Is(err, ErrReadOnlyFS) || !strings.Contains(err.Error(), "holds no state database") {
		t.Errorf("Open of an empty read-only directory: %v", err)
	}
}

// TestReadOnlyStateDirOthersCouldReplaceIsRefused: a state dir on a read-only file system is
// opened by another path (openReadOnly) that checked the dir's own owner, not the directories
// on the way to it as a writable one's (checkAncestors): a read-only mount reached through a
// directory another user owns was read, though that user could move their own state dir in its
// place, and volctl would show it (its claims, plugins, sockets) as the host's.
func TestReadOnlyStateDirOthersCouldReplaceIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	dir := t.TempDir()
	w, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro := readOnlyView(t, dir)
	root := t.TempDir()
	theirs := mkdir(t, root, "theirs", 0o755, 4242)
	at := filepath.Join(theirs, "state")
	if err := os.Mkdir(at, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(ro, at, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(at, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", at, err)
		}
	})
	if err := unix.Mount("", at, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to remount a bind read-only: %v", err)
	}
	s, err := Open(context.Background(), at)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%s), a read-only state dir in a directory uid 4242 owns: opened, want it refused", at)
	}
	if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), theirs+", which is owned by uid 4242") {
		t.Errorf("Open(%s): %v, want ErrNotOwned naming %s and its owner", at, err, theirs)
	}
	// Its own path, in directories root owns, still opens.
	s, err = Open(context.Background(), ro)
	if err != nil {
		t.Fatalf("Open(%s): %v", ro, err)
	}
	s.Close()
}
