package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// commitVolumes commits one volume per transaction, each a commit that carries the state mark.
func commitVolumes(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		update(t, s, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: fmt.Sprintf("%s%d", prefix, i), PluginID: "p", State: VolumeReady})
		})
	}
}

// readFile is os.ReadFile, failing the test.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkpointedWithVolumes is the volctl.db of a store that committed three volumes and was
// closed (checkpointed: the file alone is its state).
func checkpointedWithVolumes(t *testing.T) []byte {
	t.Helper()
	other := newStore(t)
	commitVolumes(t, other, "other", 3)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	return readFile(t, other.Path())
}

// openMismatched puts db and wal in a new state dir and opens it, which must be refused saying
// why (want) and what to do; neither file may be changed.
func openMismatched(t *testing.T, db, wal []byte, want string) {
	t.Helper()
	dir := t.TempDir()
	writeState(t, dir, db, wal, nil)
	refusedPair(t, dir, db, wal, want)
}

// writeState writes a state database, its WAL and, unless nil, its -shm in dir.
func writeState(t *testing.T, dir string, db, wal, shm []byte) {
	t.Helper()
	path := filepath.Join(dir, FileName)
	for name, b := range map[string][]byte{path: db, path + "-wal": wal, path + "-shm": shm} {
		if b == nil {
			continue
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// refusedPair opens the state dir dir, whose database db and WAL wal are not a pair: the open
// must be refused saying why (want) and what to do, and change neither file.
func refusedPair(t *testing.T, dir string, db, wal []byte, want string) {
	t.Helper()
	path := filepath.Join(dir, FileName)
	s, err := Open(context.Background(), dir)
	if err == nil {
		var ids []string
		verr := s.View(context.Background(), func(tx *Tx) error {
			vs, err := tx.Volumes().List(VolumeFilter{})
			for _, v := range vs {
				ids = append(ids, v.ID)
			}
			return err
		})
		s.Close()
		t.Fatalf("Open of a database beside a WAL not its own succeeded (it reads volumes %v, %v)", ids, verr)
	}
	for _, w := range []string{
		"the write-ahead log " + path + "-wal is not the one of the state database " + path + ": " + want,
		"move " + path + "-wal and " + path + "-shm out of the state dir",
		"put back the volctl.db it was written beside",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %q\nwant it to say %q", err, w)
		}
	}
	if got := readFile(t, path); !bytes.Equal(got, db) {
		t.Errorf("the refused open changed %s", path)
	}
	if got := readFile(t, path+"-wal"); !bytes.Equal(got, wal) {
		t.Errorf("the refused open changed %s-wal", path)
	}
}

// TestOpenRefusesTheWALOfAnotherDatabase: another state dir's volctl.db copied in beside this
// one's WAL. Before, SQLite applied the WAL's pages to it: the open succeeded and read a mix.
func TestOpenRefusesTheWALOfAnotherDatabase(t *testing.T) {
	t.Parallel()
	db := checkpointedWithVolumes(t)

	live := newStore(t)
	commitVolumes(t, live, "live", 3)
	wal := readFile(t, live.Path()+"-wal")
	if len(wal) <= walHeaderSize {
		t.Fatalf("the live store's WAL holds %d bytes, want commits in it", len(wal))
	}
	openMismatched(t, db, wal, "the log holds commits of another database (state mark ")
}

// TestOpenOnAReadOnlyFileSystemRefusesTheWALOfAnotherDatabase: the same on a read-only file
// system (a backup mounted read-only), where SQLite reads the WAL into memory.
func TestOpenOnAReadOnlyFileSystemRefusesTheWALOfAnotherDatabase(t *testing.T) {
	t.Parallel()
	other := newStore(t)
	commitVolumes(t, other, "other", 3)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	db := readFile(t, other.Path())
	live := newStore(t)
	commitVolumes(t, live, "live", 3)
	wal, shm := readFile(t, live.Path()+"-wal"), readFile(t, live.Path()+"-shm")
	dir := t.TempDir()
	writeState(t, dir, db, wal, shm)
	// Said for a read-only file system, the remedy where it can be made
	// (TestWALPairRefusedOnAReadOnlyFileSystemSaysWhereTheRemedyIsMade).
	ro := readOnlyView(t, dir)
	_, err := Open(context.Background(), ro)
	path := filepath.Join(ro, FileName)
	for _, w := range []string{
		"the write-ahead log " + path + "-wal is not the one of the state database " + path + ": the log holds commits of another database (state mark ",
		"on the writable state dir it shows",
		"put back the volctl.db it was written beside",
	} {
		if err == nil || !strings.Contains(err.Error(), w) || !errors.Is(err, ErrReadOnlyFS) {
			t.Errorf("err = %v\nwant it to say %q, read-only (ErrReadOnlyFS)", err, w)
		}
	}
	if got := readFile(t, filepath.Join(dir, FileName)); !bytes.Equal(got, db) {
		t.Errorf("the database was changed by the refused open")
	}
	if got := readFile(t, filepath.Join(dir, FileName+"-wal")); !bytes.Equal(got, wal) {
		t.Errorf("the WAL was changed by the refused open")
	}
}

// TestOpenRefusesAnOlderDatabaseUnderItsWAL: a backup of volctl.db restored over it while the
// state dir's WAL stays, the WAL restarted since the backup. Before, SQLite applied the WAL to
// the backup, whose pages the WAL's commits did not start from.
func TestOpenRefusesAnOlderDatabaseUnderItsWAL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	commitVolumes(t, s, "backed-up", 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	backup := readFile(t, filepath.Join(dir, FileName))

	if s, err = Open(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	commitVolumes(t, s, "since", 3)
	s.checkpointNow()               // into volctl.db: the WAL restarts at the next commit
	commitVolumes(t, s, "after", 2) // the WAL's commits start here
	if err := s.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	wal := readFile(t, filepath.Join(dir, FileName+"-wal"))
	openMismatched(t, backup, wal, "the database is older than the log: it is at commit ")
}

// TestOpenRefusesAnOlderWALBesideItsDatabase: a WAL copied aside and put back after the state
// went on (a copy of the files made at two moments). Before, SQLite applied its old pages over
// the newer database's.
func TestOpenRefusesAnOlderWALBesideItsDatabase(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	commitVolumes(t, s, "early", 2)
	wal := readFile(t, s.Path()+"-wal")
	commitVolumes(t, s, "late", 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openMismatched(t, readFile(t, s.Path()), wal, "the log is older than the database: its commits end at commit ")
}

// TestOpenAcceptsItsOwnWAL: the pairs volctl itself leaves are opened, each with its state: a
// WAL left at exit, one whose commits were checkpointed and restarted, and one a database
// migrated from before the state mark made its first mark in.
func TestOpenAcceptsItsOwnWAL(t *testing.T) {
	t.Parallel()
	reopen := func(t *testing.T, dir string, want int) {
		t.Helper()
		s, err := Open(context.Background(), dir)
		if err != nil {
			t.Fatalf("Open of volctl's own files: %v", err)
		}
		defer s.Close()
		view(t, s, func(tx *Tx) error {
			vs, err := tx.Volumes().List(VolumeFilter{})
			if len(vs) != want {
				t.Errorf("reopened, it reads %d volumes, want %d", len(vs), want)
			}
			return err
		})
	}
	t.Run("left at exit", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "state")
		s, err := Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		commitVolumes(t, s, "v", 3)
		s.checkpointNow()
		commitVolumes(t, s, "w", 2)
		if err := s.CloseAtExit(); err != nil {
			t.Fatal(err)
		}
		reopen(t, dir, 5)
	})
	t.Run("migrated from before the mark", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "state")
		s, err := open(context.Background(), dir, markVersion-1)
		if err != nil {
			t.Fatal(err)
		}
		commitVolumes(t, s, "old", 2)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = Open(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		commitVolumes(t, s, "new", 2)
		if err := s.CloseAtExit(); err != nil {
			t.Fatal(err)
		}
		reopen(t, dir, 4)
	})
}

// TestOpenBesideALiveWriterIsNotRefused: the pair check reads the WAL and the file while
// another volctl commits, checkpoints and restarts the WAL; every open must take them for the
// pair they are.
func TestOpenBesideALiveWriterIsNotRefused(t *testing.T) {
	t.Parallel()
	w := newStore(t)
	dir := filepath.Dir(w.Path())
	done := make(chan error, 1)
	go func() {
		for i := range 300 {
			if err := w.Update(context.Background(), func(tx *Tx) error {
				return tx.Volumes().Insert(&Volume{ID: fmt.Sprintf("v%d", i), PluginID: "p", State: VolumeReady})
			}); err != nil {
				done <- err
				return
			}
			if i%7 == 6 {
				w.checkpointNow() // the next commit restarts the WAL
			}
		}
		done <- nil
	}()
	opens := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			if opens == 0 {
				t.Fatal("no open ran while the writer wrote")
			}
			t.Logf("%d opens beside the writer", opens)
			return
		default:
		}
		s, err := Open(context.Background(), dir)
		if err != nil {
			t.Fatalf("open %d beside a live writer: %v", opens, err)
		}
		s.Close()
		opens++
	}
}

// TestReadOnTheWriteConnectionWritesNoMark: a read on the write connection (ViewShort) after a
// write, while another volctl holds the write lock, reads and writes nothing. Its BEGIN left the
// connection's count of changed rows as the write before it had set it; counted as a write, it
// made the read update the state mark and wait for the lock, failing with "database is locked".
func TestReadOnTheWriteConnectionWritesNoMark(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithBusyTimeout(300*time.Millisecond))
	commitVolumes(t, s, "v", 1)
	other, err := Open(context.Background(), filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- other.Update(context.Background(), func(tx *Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	err = s.ViewShort(context.Background(), func(tx *Tx) error {
		_, err := tx.Volumes().List(VolumeFilter{})
		return err
	})
	close(release)
	if err != nil {
		t.Errorf("a read on the write connection while another holds the write lock: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestOpenBesideAWALHoldingAVacuumIsNotRefused: a VACUUM run by hand (sqlite3) while a volctl
// holds the database open writes the whole database again into the WAL, its tables at other
// pages, the state mark among them; the WAL then holds copies of the mark at two pages, and the
// file's page where the WAL's first copy is may hold anything. The pair is one database's, and
// the refusal's advice (move the WAL aside) would lose the commits in it.
func TestOpenBesideAWALHoldingAVacuumIsNotRefused(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"commits before the vacuum", "the vacuum first"} {
		t.Run(first, func(t *testing.T) {
			live := newStore(t)
			commitVolumes(t, live, "a", 40)
			update(t, live, func(tx *Tx) error { // free pages for the vacuum to take back
				for i := range 30 {
					if err := tx.Volumes().Delete(fmt.Sprintf("a%d", i)); err != nil {
						return err
					}
				}
				return nil
			})
			db, err := sql.Open("sqlite", live.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if first == "the vacuum first" {
				// A checkpoint that restarts the WAL, so that the vacuum is its first commit.
				if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.Exec("VACUUM"); err != nil {
				t.Fatal(err)
			}
			commitVolumes(t, live, "b", 3)
			if fi, err := os.Stat(live.Path() + "-wal"); err != nil || fi.Size() <= walHeaderSize {
				t.Fatalf("the WAL after the vacuum: %v, %v; want commits in it", fi, err)
			}
			s, err := Open(context.Background(), filepath.Dir(live.Path()))
			if err != nil {
				t.Fatalf("Open beside the WAL of a vacuum of the same database: %v", err)
			}
			defer s.Close()
			var n int
			if err := s.View(context.Background(), func(tx *Tx) error {
				vs, err := tx.Volumes().List(VolumeFilter{})
				n = len(vs)
				return err
			}); err != nil || n != 13 {
				t.Errorf("after the vacuum the state reads %d volumes (%v), want 13", n, err)
			}
		})
	}
}

// TestOpenRefusesTheWALOfAnotherDatabaseWhoseMarkIsElsewhere: another state dir's volctl.db
// copied in, its state mark at another page than this WAL's copies (it was vacuumed; a database
// migrated from an older schema with rows in it has it elsewhere too): the mark is found where
// it is, and the pair refused.
func TestOpenRefusesTheWALOfAnotherDatabaseWhoseMarkIsElsewhere(t *testing.T) {
	t.Parallel()
	other := newStore(t)
	commitVolumes(t, other, "other", 40)
	path := other.Path()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	vacuum(t, path, "DELETE FROM volumes WHERE id LIKE 'other1%'", "VACUUM")
	db := readFile(t, path)

	live := newStore(t)
	commitVolumes(t, live, "live", 3)
	wal := readFile(t, live.Path()+"-wal")
	openMismatched(t, db, wal, "the log holds commits of another database (state mark ")
}

// TestOpenRefusesADatabaseWithoutMarkUnderAMarkedWAL: a volctl.db with no state mark (from a
// volctl before it, or its row removed) beside a WAL whose commits carry one and did not make
// it: the file is not the one the WAL's commits were checkpointed into.
func TestOpenRefusesADatabaseWithoutMarkUnderAMarkedWAL(t *testing.T) {
	t.Parallel()
	other := newStore(t)
	commitVolumes(t, other, "other", 3)
	path := other.Path()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	vacuum(t, path, "DELETE FROM state_mark")
	db := readFile(t, path)

	live := newStore(t)
	commitVolumes(t, live, "live", 3)
	vacuum(t, live.Path(), "PRAGMA wal_checkpoint(TRUNCATE)") // the WAL restarts: its first commit is not the mark's first
	commitVolumes(t, live, "later", 3)
	wal := readFile(t, live.Path()+"-wal")
	openMismatched(t, db, wal, "the log's commits carry a state mark, and the database has none")
}

// vacuum runs statements on the database at path through a connection of its own, which
// checkpoints and removes the WAL when it is the last to close.
func vacuum(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestOpenRefusesAnUnmarkedLogOfAnotherDatabase: the WAL of a state dir where no row was
// written yet (its migrations alone, no state mark in it) copied beside a database that has
// rows. Before, it was left to SQLite, which applied it: every volume recorded vanished from
// every command, to be written into the file at the next checkpoint.
func TestOpenRefusesAnUnmarkedLogOfAnotherDatabase(t *testing.T) {
	t.Parallel()
	db := checkpointedWithVolumes(t)
	fresh := newStore(t) // migrated, nothing written: a WAL without a state mark
	wal := readFile(t, fresh.Path()+"-wal")
	if len(wal) <= walHeaderSize {
		t.Fatalf("the fresh store's WAL holds %d bytes, want its migrations in it", len(wal))
	}
	openMismatched(t, db, wal, "the log's commits carry no state mark, and rewrite page ")
}
