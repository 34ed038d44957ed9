package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"
)

// SQLite applies volctl.db-wal to whatever database file it finds beside it: nothing in a WAL
// names its database. A WAL left beside another file (a backup restored over volctl.db, a copy
// of another state dir's volctl.db put in its place) had its pages applied over that file's,
// the two databases mixed without an error. So the database carries a mark (migration 0009):
// one row, naming it (a random id) and counting the commits that changed a row (seq), which
// each such commit updates, so that every commit's frames in the WAL hold a copy of it. Before
// SQLite opens the files, checkWALPair reads the copies in the WAL's committed frames and the
// one in the file, as identify reads the marks of the header, and refuses a pair that is not
// one: another database's id, or a file older than the WAL's first commit (the commits between
// were checkpointed into a file that is gone) or newer than its last.
//
// What the pair check reads races with nothing a live volctl does to the files: the WAL is read
// first, and the file's copy of the mark only moves forward (a checkpoint copies later commits
// into it), so a file older than the WAL's first commit was older when the WAL was read. A file
// newer than the WAL's last commit read may have had the commits written since checkpointed
// into it: the WAL is read again, and the pair refused only when it is still the same WAL
// (the same salts) and still ends before the file.

// markVersion is the schema version from which the database has the state mark.
const markVersion = 9

// markMagic is the state mark's first column, which tells its page from any other.
const markMagic = "volctl state mark"

// markUpdate is the statement a commit that changed a row runs last: the first makes the
// mark, with its id, every later one counts itself.
const markUpdate = "INSERT INTO state_mark (k, magic, id, seq) VALUES (1, '" + markMagic + "', randomblob(16), 1) " +
	"ON CONFLICT (k) DO UPDATE SET seq = seq + 1"

// walMark is a copy of the state mark in a committed WAL frame.
type walMark struct {
	frame int    // the frame's index in the WAL
	page  uint32 // the page it is a copy of
	id    []byte
	seq   int64
}

// checkWALPair refuses the database at path when its WAL, of walSize bytes, holds commits that
// the state mark says are not of that file. A WAL with no marked commit (none since the last
// restart, or written by a volctl before markVersion), or a file whose page holds no mark while
// the WAL's first commit made it, cannot be told and is left to SQLite, as before.
func checkWALPair(path string, size, walSize int64) error {
	if size == 0 || walSize <= walHeaderSize {
		return nil
	}
	// A pair refused is looked at again: a page read while a live volctl's checkpoint wrote it
	// may read torn. What is wrong with the files is wrong at every look.
	var err error
	for attempt := range pairLooks {
		if err = lookAtPair(path); err == nil {
			return nil
		}
		if attempt+1 < pairLooks {
			time.Sleep(pairLookPause)
		}
	}
	return err
}

// pairLooks is how many times checkWALPair looks at a pair before refusing it, pairLookPause
// the pause between looks.
const (
	pairLooks     = 3
	pairLookPause = 5 * time.Millisecond
)

// lookAtPair is one look of checkWALPair's.
func lookAtPair(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // checkFiles saw it; SQLite says what is wrong
	}
	defer f.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:16]) != sqliteMagic {
		return nil
	}
	pageSize := pageSizeOf(binary.BigEndian.Uint16(head[16:18]))
	if pageSize == 0 {
		return nil
	}
	readLog := func() *dbFile {
		db := &dbFile{f: f, pageSize: pageSize, reserved: int(head[20]), findMarks: true}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			db.readWAL(path+"-wal", fi.Size())
		}
		return db
	}
	wal := readLog()
	defer wal.close()
	if len(wal.marks) == 0 {
		return unmarkingLog(path, f, wal)
	}
	first, last := wal.marks[0], wal.marks[len(wal.marks)-1]
	for _, m := range wal.marks {
		if !bytes.Equal(m.id, first.id) {
			return walPairError(path, fmt.Sprintf("the log holds commits of two databases (state marks %x and %x)", first.id, m.id))
		}
	}
	id, seq, ok := fileMark(f, pageSize, wal.marks)
	switch {
	case !ok && first.seq == 1:
		return nil // the WAL's first marked commit made the mark: the file is from before it
	case !ok:
		return walPairError(path, fmt.Sprintf("the log's commits carry a state mark, and the database has none (page %d in the log)", first.page))
	case !bytes.Equal(id, first.id):
		return walPairError(path, fmt.Sprintf("the log holds commits of another database (state mark %x on page %d; the database's is %x)",
			first.id, first.page, id))
	}
	switch {
	case seq < first.seq-1:
		return walPairError(path, fmt.Sprintf("the database is older than the log: it is at commit %d of its state mark, and the log's commits start at %d, "+
			"those between checkpointed into a file that is no longer there (a backup restored over volctl.db?)", seq, first.seq))
	case seq > last.seq:
		again := readLog()
		defer again.close()
		if !bytes.Equal(again.salts, wal.salts) || len(again.marks) > 0 && again.marks[len(again.marks)-1].seq >= seq {
			return nil // a live volctl wrote and checkpointed meanwhile
		}
		return walPairError(path, fmt.Sprintf("the log is older than the database: its commits end at commit %d of the state mark, and the database is at %d", last.seq, seq))
	}
	return nil
}

// unmarkingLog refuses a WAL with no marked commit whose committed frames rewrite the page
// where the database file f keeps its state mark with a page that holds none: the mark is
// never deleted, and a VACUUM that moves it copies it (a marked frame), so those are another
// database's commits: a state dir's WAL with no row changed yet (only its migrations, as
// every new state dir's first commits are) copied beside a database that has rows. SQLite
// applied it, and every volume, claim and snapshot recorded vanished from every command, to
// be written into the file at the next checkpoint (TestOpenRefusesAnUnmarkedLogOfAnotherDatabase).
// Only the file's pages the WAL has copies of are read.
func unmarkingLog(path string, f *os.File, wal *dbFile) error {
	for n := range wal.frames {
		filePage := make([]byte, wal.pageSize)
		if _, err := f.ReadAt(filePage, int64(n-1)*int64(wal.pageSize)); err != nil {
			continue
		}
		id, seq, ok := parseMark(filePage)
		if !ok {
			continue
		}
		logPage, err := wal.page(n)
		if err != nil {
			return nil // a live volctl restarted the log meanwhile: SQLite judges
		}
		if _, _, ok := parseMark(logPage); !ok {
			return walPairError(path, fmt.Sprintf("the log's commits carry no state mark, and rewrite page %d, where the database keeps its state mark (%x, commit %d), without it",
				n, id, seq))
		}
	}
	return nil
}

// fileMark reads the state mark in the database file f: at a page where the WAL's copies are,
// else wherever it is. Its page moves only when the whole database is written again (a VACUUM
// run by hand), which puts a WAL's copies and the file's at different pages
// (TestOpenBesideAWALHoldingAVacuumIsNotRefused); only then is the file read page by page, and
// in a file rewritten whole no page but the mark's parses as one.
func fileMark(f *os.File, pageSize int, marks []walMark) (id []byte, seq int64, ok bool) {
	page := make([]byte, pageSize)
	tried := map[uint32]bool{}
	for _, m := range marks {
		if tried[m.page] {
			continue
		}
		tried[m.page] = true
		if _, err := f.ReadAt(page, int64(m.page-1)*int64(pageSize)); err == nil {
			if id, seq, ok = parseMark(page); ok {
				return id, seq, true
			}
		}
	}
	for n := uint32(2); ; n++ { // page 1 is the header's and the schema's
		if tried[n] {
			continue
		}
		if _, err := f.ReadAt(page, int64(n-1)*int64(pageSize)); err != nil {
			return nil, 0, false
		}
		if id, seq, ok = parseMark(page); ok {
			return id, seq, true
		}
	}
}

// walPairError is the refusal of a database and a WAL that are not a pair, saying why.
func walPairError(path, why string) error { return &walPairRefusal{path: path, why: why} }

// walPairRefusal is walPairError's error: the database at path and its WAL are not a pair (why).
type walPairRefusal struct{ path, why string }

func (e *walPairRefusal) Error() string {
	return fmt.Sprintf("open state: %s. "+
		"To use %s as it is (a backup restored: see Backups in docs/architecture.md), with every volctl stopped move %s and %s out of the state dir; "+
		"to use the log's state, put back the %s it was written beside",
		e.mismatch(), FileName, e.path+"-wal", e.path+"-shm", FileName)
}

// mismatch says what is wrong, without the remedy.
func (e *walPairRefusal) mismatch() string {
	return fmt.Sprintf("the write-ahead log %s is not the one of the state database %s: %s; SQLite would apply the log's pages to the database, mixing two states without an error",
		e.path+"-wal", e.path, e.why)
}

// readOnly is the refusal for a state dir that cannot be written here (openReadOnly): the
// files cannot be moved there, and the writable path's advice, followed, failed with EROFS
// (TestWALPairRefusedOnAReadOnlyFileSystemSaysWhereTheRemedyIsMade).
func (e *walPairRefusal) readOnly() string {
	return fmt.Sprintf("%s; this state dir cannot be written here, so the remedy is made where it can be: on the writable state dir it shows (volctl's own, where its commands run), "+
		"or on a copy of this one made somewhere writable: to use %s as it is, with every volctl stopped move its %s and %s out of that state dir; "+
		"to use the log's state, put back the %s it was written beside",
		e.mismatch(), FileName, FileName+"-wal", FileName+"-shm", FileName)
}

// parseMark reads the state mark from a copy of its page: a table b-tree leaf with one cell,
// row 1, whose record is (NULL: the rowid's column, markMagic, an id, seq), then the debts'
// columns a mark rewritten since migration 0012 has. Any other page is not ok.
func parseMark(p []byte) (id []byte, seq int64, ok bool) {
	if len(p) < 12 || p[0] != 0x0d || binary.BigEndian.Uint16(p[3:5]) != 1 {
		return nil, 0, false
	}
	cell := int(binary.BigEndian.Uint16(p[8:10]))
	if cell < 8 || cell >= len(p) {
		return nil, 0, false
	}
	c := p[cell:]
	size, a := sqliteVarint(c)
	rowid, b := sqliteVarint(c[a:])
	if a == 0 || b == 0 || rowid != 1 || size > uint64(len(c)-a-b) {
		return nil, 0, false
	}
	rec := c[a+b : a+b+int(size)]
	hsize, h := sqliteVarint(rec)
	if h == 0 || hsize > uint64(len(rec)) {
		return nil, 0, false
	}
	var types [4]uint64
	at := h
	for i := range types {
		if at > int(hsize) {
			return nil, 0, false // a header shorter than its own size's varint: damaged
		}
		t, k := sqliteVarint(rec[at:int(hsize)])
		if k == 0 {
			return nil, 0, false
		}
		types[i], at = t, at+k
	}
	if at > int(hsize) || types[0] != 0 || types[1] != uint64(13+2*len(markMagic)) || types[2] < 12 || types[2]%2 != 0 {
		return nil, 0, false
	}
	body := rec[hsize:]
	// The id's length compared before any conversion: a damaged serial type of 9 bytes is a
	// length past any int.
	if len(body) < len(markMagic) || (types[2]-12)/2 > uint64(len(body)-len(markMagic)) || string(body[:len(markMagic)]) != markMagic {
		return nil, 0, false
	}
	idLen := int(types[2]-12) / 2
	id = bytes.Clone(body[len(markMagic) : len(markMagic)+idLen]) // p is a reused buffer
	n := body[len(markMagic)+idLen:]
	switch t := types[3]; {
	case t == 8:
		return id, 0, true
	case t == 9:
		return id, 1, true
	case t >= 1 && t <= 6:
		width := []int{0, 1, 2, 3, 4, 6, 8}[t]
		if len(n) < width {
			return nil, 0, false
		}
		for i := range width {
			seq = seq<<8 | int64(n[i])
		}
		if shift := 64 - 8*width; width < 8 {
			seq = seq << shift >> shift // sign-extend
		}
		return id, seq, true
	}
	return nil, 0, false
}
