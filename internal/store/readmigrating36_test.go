package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/testproc"
)

// holdMigrationLock holds the open lock of the database in dir exclusive, as a volctl
// migrating it does, until the test ends. A store of dir closed just before may hold it a
// moment yet, through a process being started (testproc.LockExclusive).
func holdMigrationLock(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, FileName)+lockSuffix, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	testproc.LockExclusive(t, f) // the store closed, its lock may live a moment in a child being started
}

// readerDuringAMigration opens, ForReading, a state holding plugin p (socket /run/p.sock)
// while another volctl holds the open lock to migrate it, and reads p through it once: the
// store, and the state dir.
func readerDuringAMigration(t *testing.T) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	dir := stateWithPluginP(t)
	holdMigrationLock(t, dir)
	r, err := Open(ctx, dir, ForReading(), WithBusyTimeout(time.Second))
	if err != nil {
		t.Fatalf("a reader while another volctl migrates: %v; want the last committed state read", err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.View(ctx, func(tx *Tx) error {
		p, err := tx.Plugins().Get("p")
		if err == nil && p.Socket != "/run/p.sock" {
			t.Errorf("before the migration commits: plugin p's socket %q", p.Socket)
		}
		return err
	}); err != nil {
		t.Fatalf("reading plugin p while another volctl migrates: %v", err)
	}
	return r, dir
}

// TestReaderDoesNotWaitForAMigration: `volctl volume status` (a store opened ForReading) while
// another volctl held the open lock exclusive, as a newer volctl migrating the database does,
// or one stopped (^Z) or hung mid-migration, waited the busy timeout, 30 s, then failed ("has
// been migrating its schema"), for a state it could read: the database is at this volctl's
// version and a migration is one write transaction, invisible to a WAL reader until it
// commits. Now it reads the last committed state at once, and writes nothing: a write's error
// names the migration and matches ErrBusy (a reader's side write skips it). The busy timeout is
// short here so that the old code fails, not hangs: the assertion is success, not time.
func TestReaderDoesNotWaitForAMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := readerDuringAMigration(t)
	werr := r.Update(ctx, func(tx *Tx) error { return tx.Plugins().Delete("p") })
	if !errors.Is(werr, ErrBusy) || !strings.Contains(werr.Error(), "migrating the state database") || !strings.Contains(werr.Error(), "run it again") {
		t.Errorf("a write of the reader meanwhile: %v; want ErrBusy naming the migration and what to do", werr)
	}
	if r.CheckWritable() == nil {
		t.Error("CheckWritable is nil: an operation that writes would start and fail item by item")
	}
}

// The honest waits stay: a writer (a claim) still waits for the migration, and so does a
// reader of a database older than this volctl, which it must migrate itself once the other is
// done (its reads need the new schema). Both give up at the busy timeout, saying why.
func TestWritersAndOldDatabasesStillWaitForAMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	current := filepath.Join(t.TempDir(), "state")
	s, err := Open(ctx, current)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	older := filepath.Join(t.TempDir(), "state")
	if s, err = open(ctx, older, SchemaVersion()-1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	holdMigrationLock(t, current)
	holdMigrationLock(t, older)
	for _, c := range []struct {
		what string
		dir  string
		opts []Option
	}{
		{"a writer", current, nil},
		{"a reader of an older database", older, []Option{ForReading()}},
	} {
		s, err := Open(ctx, c.dir, append(c.opts, WithBusyTimeout(50*time.Millisecond))...)
		if err == nil {
			s.Close()
			t.Errorf("%s opened while another volctl migrates; want it to wait, then refuse", c.what)
			continue
		}
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "migrating its schema") {
			t.Errorf("%s while another volctl migrates: %v; want ErrBusy saying another volctl is migrating", c.what, err)
		}
	}
}

// stateWithPluginP is a state dir, closed, that holds plugin "p".
func stateWithPluginP(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Plugins().Put(&Plugin{ID: "p", Type: "monolith", Socket: "/run/p.sock"}) })
	s.Close()
	return dir
}
