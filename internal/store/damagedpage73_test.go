package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// openCatchingPanic is Open of dir, a panic in it returned as a failure of the test rather
// than the end of the test binary.
func openCatchingPanic(t *testing.T, dir string) (s *Store, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, nil
			t.Fatalf("Open of %s panicked instead of refusing the damaged file with an error naming it: %v\n%s", dir, r, debug.Stack())
		}
	}()
	return Open(context.Background(), dir)
}

// recordHeaderAt is the offset in page p of the record header of the leaf cell whose pointer
// is the i-th of the page's cell pointer array, the b-tree page header starting at at.
func recordHeaderAt(t testing.TB, p []byte, at, i int) int {
	t.Helper()
	cell := int(binary.BigEndian.Uint16(p[at+8+2*i:]))
	_, a := sqliteVarint(p[cell:])
	_, b := sqliteVarint(p[cell+a:])
	if a == 0 || b == 0 {
		t.Fatalf("cell %d of the page at offset %d does not read as a table leaf cell", i, cell)
	}
	return cell + a + b
}

// TestOpenOfADatabaseWhoseStateMarkPageIsDamagedIsRefusedNotAPanic: one byte of volctl.db's
// state mark page was damaged (the record header's size, a bit flip or a torn sector leaving
// it 0), a WAL with marked commits beside it, as every command leaves one (CloseAtExit). Open
// panicked in parseMark (walpair.go), slicing rec[1:0], and volctl ended with exit 70,
// "internal software error", at every command, where docs/architecture.md promises that "a
// database SQLite cannot read as one (SQLITE_CORRUPT, SQLITE_NOTADB) is said, at Open and in
// any transaction, naming the database and what to do". Found by helper review73.
func TestOpenOfADatabaseWhoseStateMarkPageIsDamagedIsRefusedNotAPanic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	commitVolumes(t, s, "old", 3)
	if err := s.Close(); err != nil { // the file holds the mark
		t.Fatal(err)
	}
	s, err := Open(ctx, filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	commitVolumes(t, s, "new", 3) // the WAL holds marked commits
	db, wal := readFile(t, s.Path()), readFile(t, s.Path()+"-wal")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(wal) <= walHeaderSize {
		t.Fatalf("the WAL holds %d bytes, want marked commits in it", len(wal))
	}
	pageSize := pageSizeOf(binary.BigEndian.Uint16(db[16:18]))
	damaged := -1
	for off := pageSize; off+pageSize <= len(db); off += pageSize {
		if _, _, ok := parseMark(db[off : off+pageSize]); ok {
			p := db[off : off+pageSize]
			p[recordHeaderAt(t, p, 0, 0)] = 0 // the record header's size, damaged
			damaged = off / pageSize
			break
		}
	}
	if damaged < 0 {
		t.Fatalf("no page of the checkpointed database holds the state mark")
	}
	dir := t.TempDir()
	writeState(t, dir, db, wal, nil)
	s, err = openCatchingPanic(t, dir)
	if err == nil {
		s.Close()
		t.Fatalf("Open of a database whose state mark page %d is damaged succeeded", damaged+1)
	}
	if path := filepath.Join(dir, FileName); !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v\nwant it to name %s", err, path)
	}
	if got := readFile(t, filepath.Join(dir, FileName)); !bytes.Equal(got, db) {
		t.Errorf("the refused open changed the damaged database")
	}
}

// TestOpenOfAnUnmarkedDatabaseWithADamagedSchemaPageIsRefusedNotAPanic: volctl.db is a
// SQLite file without volctl's marks (another program's, or a new state's first page) whose
// schema page has one damaged byte (its one row's record header size, 0). Open's first look
// (identify.go's schemaEntry) panicked slicing rec[1:0], before anything else, and volctl
// ended with exit 70 at every command, where docs/architecture.md promises a foreign file "is
// refused as it was found" and a damaged one "is said, at Open ..., naming the database and
// what to do". Found by helper review73.
func TestOpenOfAnUnmarkedDatabaseWithADamagedSchemaPageIsRefusedNotAPanic(t *testing.T) {
	t.Parallel()
	scratch := filepath.Join(t.TempDir(), "other.db")
	raw := rawDB(t, scratch)
	if _, err := raw.Exec("CREATE TABLE other (x)"); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil { // checkpointed: the file alone holds it
		t.Fatal(err)
	}
	db := readFile(t, scratch)
	if binary.BigEndian.Uint32(db[68:72]) != 0 || binary.BigEndian.Uint32(db[60:64]) != 0 {
		t.Fatalf("the other program's file is marked: application id %#x, version %d",
			binary.BigEndian.Uint32(db[68:72]), binary.BigEndian.Uint32(db[60:64]))
	}
	if db[100] != 0x0d || binary.BigEndian.Uint16(db[103:105]) != 1 {
		t.Fatalf("page 1 is no table leaf with one row (type %#x, %d cells)", db[100], binary.BigEndian.Uint16(db[103:105]))
	}
	db[recordHeaderAt(t, db, 100, 0)] = 0 // the schema row's record header size, damaged
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := openCatchingPanic(t, dir)
	if err == nil {
		s.Close()
		t.Fatal("Open of another program's damaged database succeeded")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v\nwant it to name %s", err, path)
	}
	if got := readFile(t, path); !bytes.Equal(got, db) {
		t.Errorf("the refused open changed the file")
	}
	for _, suffix := range []string{"-wal", "-shm", lockSuffix} {
		if _, err := os.Lstat(path + suffix); err == nil {
			t.Errorf("the refused open made %s", FileName+suffix)
		}
	}
}
