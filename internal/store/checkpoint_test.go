package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// walPages is the write connection's WAL autocheckpoint threshold, read on it.
func walPages(t *testing.T, s *Store) int {
	t.Helper()
	c, err := s.w.get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.w.put(c)
	var n int
	if err := c.sc.QueryRowContext(context.Background(), "PRAGMA wal_autocheckpoint").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// bigEvent appends an event of about a page, so a few hundred of them fill hundreds of WAL pages.
func bigEvent(tx *Tx) error {
	return tx.Events().Append(&Event{Kind: "k", Message: strings.Repeat("x", 3000)})
}

// tenPages appends ten events of about a page each.
func tenPages(tx *Tx) error {
	for range 10 {
		if err := bigEvent(tx); err != nil {
			return err
		}
	}
	return nil
}

// A process's first bulkWrites writes checkpoint the WAL every walAutocheckpoint pages, so a
// command leaves little for the next one to read back; from then on the process writes in bulk
// and checkpoints every walBulkAutocheckpoint pages: a checkpoint runs inside the commit that
// crosses the threshold and every writer of the process waits for its fsyncs.
func TestBulkWriterCheckpointsLessOften(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A reader's writes on the side (health readings) do not make a process a bulk writer.
	for range 2 * bulkWrites {
		if err := s.TryUpdateProgress(context.Background(), func(tx *Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	wal := filepath.Join(dir, FileName+"-wal")
	walSize := func() int64 {
		fi, err := os.Stat(wal)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// The WAL file never shrinks while the store is open: a checkpointed WAL is written again
	// from its start. Its size is the most it held since Open, in pages of 4 KiB and a header each.
	const page = 4096 + 24
	for i := range bulkWrites {
		if got := walPages(t, s); got != walAutocheckpoint {
			t.Fatalf("after %d write(s), the write connection checkpoints every %d pages, want %d", i, got, walAutocheckpoint)
		}
		if err := s.UpdateProgress(context.Background(), tenPages); err != nil {
			t.Fatal(err)
		}
	}
	if n := walSize() / page; n > 2*walAutocheckpoint {
		t.Fatalf("after %d writes of about 10 pages each, the WAL held %d pages, want it checkpointed at %d", bulkWrites, n, walAutocheckpoint)
	}
	for range 40 {
		if err := s.UpdateProgress(context.Background(), tenPages); err != nil {
			t.Fatal(err)
		}
	}
	if got := walPages(t, s); got != walBulkAutocheckpoint {
		t.Errorf("after %d writes, the write connection checkpoints every %d pages, want %d", bulkWrites+40, got, walBulkAutocheckpoint)
	}
	if n := walSize() / page; n <= 2*walAutocheckpoint {
		t.Errorf("40 more writes of about 10 pages each left a WAL of at most %d pages: still checkpointed every %d, want every %d", n, walAutocheckpoint, walBulkAutocheckpoint)
	}

	// A write connection found broken is replaced by one opened with the connection string's
	// walAutocheckpoint; the process still writes in bulk, so the new one is raised too.
	c, err := s.w.get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.broken.Store(true)
	s.w.put(c)
	if err := s.UpdateProgress(context.Background(), bigEvent); err != nil {
		t.Fatal(err)
	}
	if n := s.w.opened.Load(); n != 2 {
		t.Fatalf("the store opened %d write connection(s), want the broken one replaced", n)
	}
	if got := walPages(t, s); got != walBulkAutocheckpoint {
		t.Errorf("the write connection that replaced a broken one checkpoints every %d pages, want %d", got, walBulkAutocheckpoint)
	}
}

// A process that wrote in bulk checkpoints the WAL when it exits: the database file alone holds
// everything committed, and the next process reads back no WAL of up to a thousand pages.
func TestCloseAtExitAfterBulkWritesCheckpoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	const writes = bulkWrites + 20
	for range writes {
		if err := s.UpdateProgress(context.Background(), bigEvent); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeLeftForExit(s) })
	// The database file copied alone, without its WAL, holds what was checkpointed into it.
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(alone, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", alone)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != writes {
		t.Errorf("after %d writes and CloseAtExit, the database file alone holds %d events, want all %d: the rest is left in the WAL for the next process to read back", writes, n, writes)
	}
}

// A bulk process whose write connection is still in a transaction when it exits (another
// goroutine's write) does not wait for it to checkpoint: CloseAtExit returns, the checkpoint
// is left to the next process, and the write in flight still commits.
func TestCloseAtExitSkipsTheCheckpointWhileTheWriteConnectionIsBusy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for range bulkWrites {
		if err := s.Update(context.Background(), func(tx *Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	inTx, release, written := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		written <- s.Update(context.Background(), func(tx *Tx) error {
			close(inTx)
			<-release
			return bigEvent(tx)
		})
	}()
	<-inTx
	closed := make(chan error, 1)
	go func() { closed <- s.CloseAtExit() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("CloseAtExit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CloseAtExit still waiting for the write connection after 10s")
	}
	close(release)
	if err := <-written; err != nil {
		t.Errorf("the write in flight at CloseAtExit: %v", err)
	}
	closeLeftForExit(s)
}
