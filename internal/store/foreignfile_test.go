package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirSnapshot is what a refused Open must leave as it found it: the state dir's mode and
// entries, and every file's mode and bytes.
type dirSnapshot struct {
	mode  os.FileMode
	files map[string]string // name -> mode and contents
}

func snapshotDir(t *testing.T, dir string) dirSnapshot {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap := dirSnapshot{mode: fi.Mode(), files: map[string]string{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		snap.files[e.Name()] = info.Mode().String() + " " + string(b)
	}
	return snap
}

func (s dirSnapshot) diff(t *testing.T, after dirSnapshot) {
	t.Helper()
	if s.mode != after.mode {
		t.Errorf("state dir's mode changed from %v to %v", s.mode, after.mode)
	}
	for name, was := range s.files {
		now, ok := after.files[name]
		switch {
		case !ok:
			t.Errorf("%s was removed", name)
		case now[:10] != was[:10]:
			t.Errorf("%s's mode changed from %s to %s", name, was[:10], now[:10])
		case now != was:
			t.Errorf("%s's contents changed", name)
		}
	}
	var made []string
	for name := range after.files {
		if _, ok := s.files[name]; !ok {
			made = append(made, name)
		}
	}
	slices.Sort(made)
	if len(made) > 0 {
		t.Errorf("files made beside the refused database: %v", made)
	}
}

// foreignDB makes another program's SQLite file at dir/volctl.db, as such a program writes it:
// in its own journal mode, readable by others, in a directory others can read.
func foreignDB(t *testing.T, dir, journal, setup string) string {
	t.Helper()
	path := filepath.Join(dir, FileName)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode("+journal+")")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(setup); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Another program's SQLite file at volctl.db is refused, and nothing of it or of its directory
// is changed first: not its mode (tightened to 0600), not its journal mode (WAL, which the
// other program's older SQLite may not read), no -wal, -shm or lock file made beside it, not
// the directory's mode. Before, Open chmod-ed the file and the dir, converted the file to WAL
// and left volctl.db-lock, and only then read that the file was not its own.
func TestOpenChangesNothingBeforeRefusingAForeignDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, journal, setup, want string
	}{
		{"other application", "DELETE", "CREATE TABLE t (x); PRAGMA application_id = 42;", "not a volctl state database (application id 0x2a, schema version 0)"},
		{"unmarked with tables", "DELETE", "CREATE TABLE t (x); INSERT INTO t VALUES (1);", "not a volctl state database (it holds other tables"},
		{"unmarked with tables, WAL", "WAL", "CREATE TABLE t (x); INSERT INTO t VALUES (1);", "not a volctl state database (it holds other tables"},
		{"versioned, WAL", "WAL", "CREATE TABLE t (x); PRAGMA user_version = 7;", "not a volctl state database (application id 0x0, schema version 7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := foreignDB(t, dir, tt.journal, tt.setup)
			before := snapshotDir(t, dir)
			s, err := Open(context.Background(), dir)
			if err == nil {
				s.Close()
				t.Fatal("Open of another program's database succeeded")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to name %s and say %q", err, path, tt.want)
			}
			before.diff(t, snapshotDir(t, dir))
		})
	}
}

// A text file, or any file that is not SQLite's, at volctl.db is refused as unreadable, saying
// what to do, and left as it is, as is its directory.
func TestOpenChangesNothingBeforeRefusingAFileThatIsNoDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("this is not a database, just text long enough to be read as a header, and more"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, dir)
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), damagedAdvice) {
		t.Errorf("err = %v\nwant it to name %s and say %q", err, path, damagedAdvice)
	}
	before.diff(t, snapshotDir(t, dir))
}

// A database file another user owns is refused before the state dir it is in is tightened.
func TestOpenChangesNothingBeforeRefusingADatabaseOfAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	dir := t.TempDir()
	path := foreignDB(t, dir, "DELETE", "CREATE TABLE t (x)")
	if err := os.Chown(path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, dir)
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("Open of another user's database succeeded")
	}
	if !strings.Contains(err.Error(), "uid 4242") && !strings.Contains(err.Error(), "4242") {
		t.Errorf("err = %v, want it to name the owner", err)
	}
	before.diff(t, snapshotDir(t, dir))
}

// A volctl command leaves its commits in the WAL (CloseAtExit): a new state's marks are there,
// not yet in volctl.db's header, which Open reads through the WAL to know the file its own.
func TestOpenKnowsItsDatabaseWhoseMarksAreInTheWALOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "k", Message: "hello"}) })
	if err := s.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 100)
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ReadAt(head, 0)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if string(head[68:72]) == "vctl" {
		t.Fatal("the header holds volctl's mark: the WAL was checkpointed, and the test shows nothing")
	}
	s, err = Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open of volctl's database whose marks are in its WAL: %v", err)
	}
	defer s.Close()
	if evs := allEvents(t, s); len(evs) != 1 {
		t.Errorf("events = %+v, want the one written", evs)
	}
}

// A foreign schema larger than page 1 (an interior page, its entries on others) is listed too.
func TestOpenNamesTheTablesOfALargeForeignSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var setup strings.Builder
	for i := range 300 {
		fmt.Fprintf(&setup, "CREATE TABLE t%03d (x INTEGER PRIMARY KEY, y TEXT UNIQUE); CREATE INDEX i%03d ON t%03d (y, x);", i, i, i)
	}
	path := foreignDB(t, dir, "DELETE", setup.String())
	before := snapshotDir(t, dir)
	_, err := Open(context.Background(), dir)
	want := "open state " + path + ": not a volctl state database (it holds other tables: t000, t001, t002, t003, t004, ...)" + foreignAdvice
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	before.diff(t, snapshotDir(t, dir))
}
