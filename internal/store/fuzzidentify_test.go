package store

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// The parsers of identify.go and walpair.go read a database's and a WAL's bytes without
// SQLite at every Open, before SQLite can say a file is damaged: whatever the bytes, they must
// return "not ok" or an error, never panic (a damaged record header once sliced rec[1:0] and
// ended every command with exit 70: TestOpenOfADatabaseWhoseStateMarkPageIsDamagedIsRefusedNotAPanic).
// docs/fuzzing.md lists the targets and how to run them longer.

// seedPages is a checkpointed volctl database, its state mark's page, and a foreign file with
// a table, for the targets' seeds.
func seedPages(f *testing.F) (state, mark, foreign []byte) {
	f.Helper()
	s := newStore(f)
	path := s.Path()
	update(f, s, func(tx *Tx) error { // a commit writes the state mark
		return tx.Volumes().Insert(&Volume{ID: "v", PluginID: "p", State: VolumeReady})
	})
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	state, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	size := pageSizeOf(binary.BigEndian.Uint16(state[16:18]))
	for off := size; off+size <= len(state); off += size {
		if _, _, ok := parseMark(state[off : off+size]); ok {
			mark = bytes.Clone(state[off : off+size])
		}
	}
	if mark == nil {
		f.Fatal("no page of a new, checkpointed state database reads as the state mark")
	}
	other := filepath.Join(f.TempDir(), "other.db")
	raw := rawDB(f, other)
	if _, err := raw.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)"); err != nil {
		f.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		f.Fatal(err)
	}
	if foreign, err = os.ReadFile(other); err != nil {
		f.Fatal(err)
	}
	return state, mark, foreign
}

// FuzzParseMark: parseMark, on any page, returns ok or not and never panics; an id it
// returns lies within the page.
func FuzzParseMark(f *testing.F) {
	_, mark, _ := seedPages(f)
	f.Add(mark)
	for _, at := range []int{0, 8, 9} {
		damaged := bytes.Clone(mark)
		damaged[at] ^= 0xff
		f.Add(damaged)
	}
	// The record header's size 0, under its own varint's length; and the id's serial type
	// made a 9-byte varint of a length past any int.
	hdr := recordHeaderAt(f, mark, 0, 0)
	damaged := bytes.Clone(mark)
	damaged[hdr] = 0
	f.Add(damaged)
	damaged = bytes.Clone(mark)
	copy(damaged[hdr+3:], bytes.Repeat([]byte{0xff}, 9))
	f.Add(damaged)
	f.Fuzz(func(t *testing.T, p []byte) {
		id, _, ok := parseMark(p)
		if ok && len(id) > len(p) {
			t.Fatalf("parseMark returned an id of %d bytes from a page of %d", len(id), len(p))
		}
	})
}

// FuzzIdentify: identify, on any file, refuses it or lets it through and never panics; a file
// whose header carries volctl's application id is always let through (SQLite and migrate judge
// it), and one that does not start with SQLite's header is always refused.
func FuzzIdentify(f *testing.F) {
	state, _, foreign := seedPages(f)
	f.Add(state)
	f.Add(foreign)
	for _, at := range []int{100, 101, 103, 105, 108} {
		damaged := bytes.Clone(foreign)
		damaged[at] ^= 0xff
		f.Add(damaged)
	}
	f.Add([]byte(sqliteMagic))
	// The schema row's record header size 0, under its own varint's length; and its name's
	// serial type a 9-byte varint of a length past any int.
	hdr := recordHeaderAt(f, foreign, 100, 0)
	damaged := bytes.Clone(foreign)
	damaged[hdr] = 0
	f.Add(damaged)
	damaged = bytes.Clone(foreign)
	copy(damaged[hdr+2:], bytes.Repeat([]byte{0xff}, 9))
	f.Add(damaged)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := identify(path, int64(len(data)), 0)
		switch {
		case len(data) > 0 && !bytes.HasPrefix(data, []byte(sqliteMagic)) && err == nil:
			t.Fatalf("identify let through a file that does not start with SQLite's header")
		case len(data) >= 72 && bytes.HasPrefix(data, []byte(sqliteMagic)) && int(int32(binary.BigEndian.Uint32(data[68:72]))) == applicationID && err != nil:
			t.Fatalf("identify refused a file with volctl's application id: %v", err)
		}
	})
}
