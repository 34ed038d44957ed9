package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command leaves the WAL to the next one (CloseAtExit), so the recent commits are in
// volctl.db-wal, not in volctl.db. A WAL whose database was removed or truncated to nothing
// (moved aside, restored without it) is refused: SQLite made an empty database over it and reset
// it, and the command went on, reporting an empty state, every commit in the WAL gone.
func TestOpenRefusesAWriteAheadLogWithoutItsDatabase(t *testing.T) {
	t.Parallel()
	live := newStore(t)
	update(t, live, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady})
	})
	wal, err := os.ReadFile(live.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(wal) <= walHeaderSize {
		t.Fatalf("the live store's WAL holds %d bytes, want commits in it", len(wal))
	}
	for _, tt := range []struct {
		name string
		db   []byte // nil: no database file
	}{{"database removed", nil}, {"database empty", []byte{}}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.db != nil {
				if err := os.WriteFile(path, tt.db, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(context.Background(), dir)
			if err == nil {
				var n int
				_ = s.View(context.Background(), func(tx *Tx) error {
					vs, err := tx.Volumes().List(VolumeFilter{})
					n = len(vs)
					return err
				})
				s.Close()
				t.Fatalf("Open of a WAL without its database succeeded (it sees %d volumes)", n)
			}
			want := "state database " + path + " is missing or empty, but its write-ahead log " + path + "-wal holds "
			if !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "restore volctl.db beside it, or move "+path+"-wal away to start with an empty state") {
				t.Errorf("err = %q, want it to say %q and what to do", err, want)
			}
			if got, err := os.ReadFile(path + "-wal"); err != nil || !bytes.Equal(got, wal) {
				t.Errorf("the WAL changed (%d bytes, was %d; %v)", len(got), len(wal), err)
			}
		})
	}
}

// What SQLite opens in the state dir must be a regular file: a named pipe in the database's place
// (or its -wal's, or -shm's) is refused, naming it, not answered "disk I/O error" or waited on.
func TestOpenRefusesADatabaseFileThatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	for _, name := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "state")
			s, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				s, err := Open(context.Background(), dir)
				if err == nil {
					s.Close()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Open with %s a named pipe hung", path)
			}
			want := "open state: state database " + path + " is a named pipe, not a regular file"
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %v, want it to start %q", err, want)
			}
		})
	}
}
