package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyStateFiles copies the files names of state dir from into state dir to.
func copyStateFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// eventsLogged is how many events the store at dir logs, read through a store of its own.
func eventsLogged(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.View(context.Background(), func(tx *Tx) (err error) { n, err = tx.Events().Logged(); return err }); err != nil {
		t.Fatalf("read the events: %v", err)
	}
	return n
}

// TestReadOnlyStateOpenedWhileItsWALIsRemovedReadsTheState: `volctl status` on a read-only bind
// of a live state dir, while another volctl closes the state through its writable path (the
// agent stopping, a dashboard quitting: the last close checkpoints the WAL into volctl.db and
// removes it). openReadOnly looks at the files, finds the WAL, and opens the database mode=ro
// to read it; the WAL removed in between, SQLite cannot open a WAL-mode database there without
// one, and the reader failed with SQLite's bare "unable to open database file (14)": nothing
// is wrong with the state, and the same command a moment later read it. Correct: the open looks
// at the files again and reads the state, every commit in it. The close is made to fall
// between the look and the open (afterReadOnlyLook). Found by helper review78 (readonly),
// which met it racing a writer process.
func TestReadOnlyStateOpenedWhileItsWALIsRemovedReadsTheState(t *testing.T) {
	live := t.TempDir()
	w := openAndAppend(t, live, "first")
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	defer closeLeftForExit(w)
	if err := w.CloseAtExit(); err != nil { // the commits left in the WAL while it has them open
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(live, FileName+"-wal")); err != nil {
		t.Fatalf("precondition: no WAL left by the writer: %v", err)
	}
	ro := readOnlyBindOf(t, live)
	closes := 0
	afterReadOnlyLook = func() {
		if closes++; closes > 1 {
			return
		}
		// The volctl that wrote closes the state: the WAL checkpointed and removed.
		closeLeftForExit(w)
		if _, err := os.Stat(filepath.Join(live, FileName+"-wal")); err == nil {
			t.Errorf("precondition: the other volctl's close left the WAL")
		}
	}
	t.Cleanup(func() { afterReadOnlyLook = nil })
	s, err := Open(context.Background(), ro)
	if err != nil {
		t.Fatalf("open of a read-only bind of a state dir whose WAL another volctl's close removed as it was opened: %v\n"+
			"want the state read: the files looked at again", err)
	}
	defer s.Close()
	if closes < 2 {
		t.Fatalf("precondition: the files were looked at %d time(s); want the open to look again", closes)
	}
	if n := eventsLogged(t, s); n < 2 {
		t.Errorf("the state read through the read-only bind logs %d events; want both commits, checkpointed into volctl.db by the close", n)
	}
}

// TestReadOnlyStateOpenedWhileItsIndexIsMadeIsNotRefused: a live volctl's open makes the WAL
// before its index (-shm), and its close removes the index before the WAL, so one look at a
// live state dir through a read-only path can find a WAL alone for a moment. openReadOnly
// refused on that one look: "its write-ahead log volctl.db-wal cannot be read there without
// volctl.db-shm: copy the state dir to a writable place to read it"; the state dir was whole, and
// the same command run again read it. Correct: a WAL without its -shm is looked at again for a
// while, and the state read once the -shm is there. Found by helper review78 (readonly).
func TestReadOnlyStateOpenedWhileItsIndexIsMadeIsNotRefused(t *testing.T) {
	live := t.TempDir()
	w := openAndAppend(t, live, "first")
	update(t, w, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	defer closeLeftForExit(w)
	if err := w.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	// The state dir as a live volctl's open has it for a moment: the WAL, not yet its -shm.
	dir := t.TempDir()
	copyStateFiles(t, live, dir, FileName, FileName+"-wal")
	shm, err := os.ReadFile(filepath.Join(live, FileName+"-shm"))
	if err != nil {
		t.Fatal(err)
	}
	ro := readOnlyBindOf(t, dir)
	made := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // well within readOnlyRelook
		made <- os.WriteFile(filepath.Join(dir, FileName+"-shm"), shm, 0o600)
	}()
	s, err := Open(context.Background(), ro)
	if merr := <-made; merr != nil {
		t.Fatal(merr)
	}
	if err != nil {
		t.Fatalf("open of a read-only bind of a state dir whose -shm was made 300ms later: %v\nwant the state read: a WAL alone looked at again", err)
	}
	defer s.Close()
	if n := eventsLogged(t, s); n < 2 {
		t.Errorf("the state read through the read-only bind logs %d events; want both commits, the WAL's too", n)
	}
}

// TestReadOnlyStateWithAWALLeftAloneIsRefusedAfterLookingAgain: a WAL that stays without its
// -shm (a copy of a state dir that left the -shm out) is refused still, once the look again
// has found it so, saying what to do, not waited for without end.
func TestReadOnlyStateWithAWALLeftAloneIsRefusedAfterLookingAgain(t *testing.T) {
	live := t.TempDir()
	w := openAndAppend(t, live, "first")
	defer closeLeftForExit(w)
	if err := w.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyStateFiles(t, live, dir, FileName, FileName+"-wal")
	ro := readOnlyBindOf(t, dir)
	start := time.Now()
	s, err := Open(context.Background(), ro)
	if err == nil {
		s.Close()
		t.Fatal("a read-only state dir whose WAL has no -shm opened")
	}
	if took := time.Since(start); !strings.Contains(err.Error(), "copy the state dir to a writable place") || !errors.Is(err, ErrReadOnlyFS) || took > readOnlyRelook+5*time.Second {
		t.Errorf("open of a read-only state dir whose WAL stays without its -shm: %v after %v; want the refusal, ErrReadOnlyFS, within the look again's bound", err, took)
	}
}

// TestReadOnlyStateWhoseWALIsGoneIsNotToldToRemoveFilesThere: a read-only copy or bind of a
// state dir whose WAL was removed while its -shm says it held commits not in volctl.db is
// refused (checkWALGone), rightly, but with the writable path's advice: "restore volctl.db
// with its -wal and -shm from a backup, or, to go on with that older state, remove
// <ro>/volctl.db-shm and run `volctl reconcile`". Followed, both fail: the -shm named is on the
// read-only file system (EROFS), and reconcile there is refused as read-only. openReadOnly
// (internal/store/readonly.go) calls checkWALGone as Open does, without saying the dir is
// read-only. Correct: on a read-only file system the refusal says so (matching ErrReadOnlyFS)
// and says where the remedy can be made: on the writable state dir, or a copy of this one
// made somewhere writable. Found by helper review78 (readonly).
func TestReadOnlyStateWhoseWALIsGoneIsNotToldToRemoveFilesThere(t *testing.T) {
	live := t.TempDir()
	// The first commit checkpointed into volctl.db (a clean close), the second left in the WAL.
	if err := openAndAppend(t, live, "first").Close(); err != nil {
		t.Fatal(err)
	}
	w := openAndAppend(t, live, "second")
	defer closeLeftForExit(w)
	if err := w.CloseAtExit(); err != nil { // the commits left in the WAL, its -shm saying so
		t.Fatal(err)
	}
	// A copy of the state dir without its WAL (left out of a backup, removed by a cleanup).
	dir := t.TempDir()
	copyStateFiles(t, live, dir, FileName, FileName+"-shm")
	ro := readOnlyBindOf(t, dir)
	s, err := Open(context.Background(), ro)
	if err == nil {
		s.Close()
		t.Fatalf("precondition: the read-only copy without its WAL opened")
	}
	if !strings.Contains(err.Error(), "gone or empty") {
		t.Fatalf("precondition: the read-only copy without its WAL: %v, want checkWALGone's refusal", err)
	}
	shm := filepath.Join(ro, FileName+"-shm")
	rmErr := os.Remove(shm)
	if strings.Contains(err.Error(), "remove "+shm) || !errors.Is(err, ErrReadOnlyFS) {
		t.Errorf("Open of a read-only state dir whose WAL is gone: %v\n"+
			"want it to say the state dir is read-only (ErrReadOnlyFS) and where the remedy can be made; "+
			"it says to remove %s (which fails there: %v) and run `volctl reconcile`, which is refused there as read-only",
			err, shm, rmErr)
	}
	// The advice followed: on the writable state dir the bind shows, the -shm removed; the
	// read-only path reads the older state.
	if !strings.Contains(err.Error(), "writable state dir") {
		t.Errorf("the refusal does not say the remedy is made on the writable state dir: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, FileName+"-shm")); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), ro)
	if err != nil {
		t.Fatalf("open of the read-only bind once the -shm was removed on the writable dir: %v", err)
	}
	defer s.Close()
	if n := eventsLogged(t, s); n != 1 {
		t.Errorf("the older state logs %d events; want the first commit's alone", n)
	}
}
