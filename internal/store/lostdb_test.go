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
	for _, tt := range lostDatabases {
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

// A state dir that held a database (its path record, volctl.path, written once the database
// is made, is there) whose database is now empty or gone, with nothing mounted below it (a
// reboot took the mounts), is refused, naming the record and what to do: it was taken for a
// new state dir, and an empty state started over it, every volume and claim forgotten. A new
// state dir opens, and so does this one once the record is removed, as the error says.
func TestOpenRefusesAnEmptyDatabaseInAStateDirThatHeldOne(t *testing.T) {
	t.Parallel()
	for _, tt := range lostDatabases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "state")
			s, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			update(t, s, func(tx *Tx) error {
				return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady})
			})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, FileName)
			for _, suffix := range []string{"-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if tt.db != nil {
				if err := os.WriteFile(path, tt.db, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(dir, "publish", "web-0", "db"), 0o750); err != nil {
				t.Fatal(err)
			}
			s, err = Open(ctx, dir)
			if err == nil {
				s.Close()
				t.Fatal("Open started a new, empty state in a state dir whose database was lost")
			}
			record := filepath.Join(dir, PathFileName)
			for _, want := range []string{path + " is missing or empty", record + ", which volctl writes once its database is made",
				filepath.Join(dir, "publish"), "restore volctl.db", "remove " + record} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open: %v\nwant it to say %q", err, want)
				}
			}
			if fi, err := os.Stat(path); (tt.db == nil) != os.IsNotExist(err) || (err == nil && fi.Size() != 0) {
				t.Errorf("refused, Open changed %s: %v, %v", path, fi, err)
			}
			opensOnceRecordRemoved(t, dir, record, "the record is removed")
		})
	}
}

// lostDatabases are the two ways a state dir's database is lost: the file removed, or left
// empty (nil: no database file).
var lostDatabases = []struct {
	name string
	db   []byte
}{{"database removed", nil}, {"database empty", []byte{}}}

// opensOnceRecordRemoved removes a state dir's path record, as the refusal says to, and checks
// that the state dir then opens (when says what else is gone by then).
func opensOnceRecordRemoved(t *testing.T, dir, record, when string) {
	t.Helper()
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open once %s: %v", when, err)
	}
	s.Close()
}
