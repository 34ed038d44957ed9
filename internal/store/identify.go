package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Open must know a database file is volctl's before it changes anything of it or of the state
// dir: SQLite, once it has the file open, converts it to WAL (the DSN's journal_mode), makes
// -wal, -shm and volctl.db-lock beside it, and Open tightens the file's and the dir's modes, all
// before a query can read the file's marks. Another program's database at volctl.db, or a file
// that is not SQLite's, would be left changed by the Open that refuses it. So the marks
// (application_id, user_version) and, for a file with neither, the names in its schema are read
// here from the bytes, as SQLite would read them, without SQLite: page 1 and the schema's pages
// as last committed, from the write-ahead log when it holds a newer copy than the file (a volctl
// command leaves its commits there, CloseAtExit, so a new state dir's marks are in the WAL only
// until a checkpoint). The file format: https://www.sqlite.org/fileformat.html.
//
// What cannot be read as a database (a damaged page) is left to SQLite, which says so after
// the open; migrate checks the marks again under the write lock, as before.

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// identify refuses the file at path when its header or schema says it is not volctl's: not a
// SQLite file, another application's, or an unmarked one with tables. A missing or empty file,
// volctl's, or an unmarked one with an empty schema (what a volctl that stopped before its first
// migration leaves) is nil; blank says it is one of the first or the last, a file that holds no
// state, as last committed (the WAL's commits read with it).
func identify(path string, size, walSize int64) (blank bool, err error) {
	if size == 0 {
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open state: %w", err)
	}
	defer f.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:16]) != sqliteMagic {
		return false, fmt.Errorf("open state %s: not a SQLite database: it does not start with SQLite's header (%s)", path, damagedAdvice)
	}
	if int(int32(binary.BigEndian.Uint32(head[68:72]))) == applicationID {
		// The file's own header is volctl's: every command opens one so, once a checkpoint has
		// moved the first migration out of the WAL, and pays no read of the WAL for it. (The
		// marks are never changed back; migrate reads them again under the write lock.)
		return false, nil
	}
	db := &dbFile{f: f, pageSize: pageSizeOf(binary.BigEndian.Uint16(head[16:18])), reserved: int(head[20])}
	defer db.close()
	if db.pageSize == 0 {
		return false, nil // a damaged header: SQLite says so
	}
	if walSize > walHeaderSize {
		db.readWAL(path+"-wal", walSize)
	}
	p1, err := db.page(1)
	if err != nil {
		return false, nil
	}
	version := int(int32(binary.BigEndian.Uint32(p1[60:64])))
	appID := int(int32(binary.BigEndian.Uint32(p1[68:72])))
	if appID == applicationID {
		return false, nil
	}
	var names []string
	if appID == 0 && version == 0 {
		if names, err = db.schemaNames(); errors.Is(err, errNotReadable) {
			// Unmarked, and a schema of rows that do not read as SQLite writes them: not a new
			// state's (its schema is empty) nor volctl's, and refused as found, before SQLite
			// puts its files beside it.
			return false, fmt.Errorf("open state %s: a SQLite file without volctl's marks whose schema cannot be read (%s)", path, damagedAdvice)
		} else if err != nil {
			return false, nil // a read that failed, or a WAL restarted meanwhile: SQLite judges
		}
		if len(names) == 0 {
			return true, nil
		}
	}
	return false, refuseForeign(path, version, appID, names)
}

// pageSizeOf is the page size a database header's field says; 0 for one no SQLite writes.
func pageSizeOf(field uint16) int {
	n := int(field)
	if n == 1 {
		n = 65536
	}
	if n < 512 || n&(n-1) != 0 {
		return 0
	}
	return n
}

// dbFile reads a database's pages as last committed: a page the WAL holds a committed copy of
// from there, any other from the file.
type dbFile struct {
	f        *os.File
	pageSize int
	reserved int              // bytes at the end of each page that are not the page's (header byte 20)
	wal      *os.File         // nil without a WAL with commits
	frames   map[uint32]int64 // page -> offset in the WAL of its last committed copy
	salts    []byte           // the WAL header's salts, which each of its frames repeats
	// findMarks has readWAL keep, in marks, the copies of the state mark its committed frames
	// hold (walpair.go).
	findMarks bool
	marks     []walMark
}

// readWAL finds the committed frames of the WAL at path, as SQLite's recovery does: from the
// header, each frame whose salts match it and whose cumulative checksum holds, up to the last
// commit frame among them. A WAL whose header does not hold is empty to SQLite, and so here.
func (db *dbFile) readWAL(path string, size int64) {
	w, err := os.Open(path)
	if err != nil {
		return
	}
	hdr := make([]byte, walHeaderSize)
	if _, err := io.ReadFull(w, hdr); err != nil {
		w.Close()
		return
	}
	magic := binary.BigEndian.Uint32(hdr[0:4])
	if magic&^1 != 0x377f0682 || int(binary.BigEndian.Uint32(hdr[8:12])) != db.pageSize {
		w.Close()
		return
	}
	bigEndian := magic&1 == 1
	s0, s1 := walChecksum(bigEndian, hdr[:24], 0, 0)
	if s0 != binary.BigEndian.Uint32(hdr[24:28]) || s1 != binary.BigEndian.Uint32(hdr[28:32]) {
		w.Close()
		return
	}
	// The frames in WAL order, and how many of them the last commit frame seen ends: a page's
	// last committed copy is its last frame among those.
	type walFrame struct {
		page uint32
		off  int64
	}
	var frames []walFrame
	var marks []walMark
	committed := 0
	// The frames are read walReadBytes at a time, not one read each: every command reads its
	// WAL here, which grows to walAutocheckpoint pages before a checkpoint empties it.
	frameSize := 24 + db.pageSize
	buf := make([]byte, max(1, min(walReadBytes/frameSize, int((size-walHeaderSize)/int64(frameSize))))*frameSize)
	off := int64(walHeaderSize)
frames:
	for off+int64(frameSize) <= size {
		chunk := buf[:min(int64(len(buf)), (size-off)/int64(frameSize)*int64(frameSize))]
		n, err := readWALAt(w, chunk, off)
		if n < frameSize {
			break
		}
		for chunk = chunk[:n]; len(chunk) >= frameSize; chunk, off = chunk[frameSize:], off+int64(frameSize) {
			frame := chunk[:frameSize]
			if !bytes.Equal(frame[8:16], hdr[16:24]) {
				break frames // a frame of an earlier generation of the WAL
			}
			s0, s1 = walChecksum(bigEndian, frame[:8], s0, s1)
			s0, s1 = walChecksum(bigEndian, frame[24:], s0, s1)
			if s0 != binary.BigEndian.Uint32(frame[16:20]) || s1 != binary.BigEndian.Uint32(frame[20:24]) {
				break frames
			}
			if db.findMarks {
				if id, seq, ok := parseMark(frame[24:]); ok {
					marks = append(marks, walMark{frame: len(frames), page: binary.BigEndian.Uint32(frame[0:4]), id: id, seq: seq})
				}
			}
			frames = append(frames, walFrame{binary.BigEndian.Uint32(frame[0:4]), off + 24})
			if binary.BigEndian.Uint32(frame[4:8]) != 0 { // a commit frame
				committed = len(frames)
			}
		}
		if err != nil {
			break // what was read whole is kept, as when each frame was a read of its own
		}
	}
	if committed == 0 {
		w.Close()
		return
	}
	db.wal, db.frames, db.salts = w, make(map[uint32]int64, committed), hdr[16:24]
	for _, m := range marks {
		if m.frame < committed {
			db.marks = append(db.marks, m)
		}
	}
	for _, fr := range frames[:committed] {
		db.frames[fr.page] = fr.off
	}
}

// walReadBytes bounds what readWAL reads at a time (at least one frame).
const walReadBytes = 64 << 10

// readWALAt is readWAL's read of the WAL's frames; tests count the reads.
var readWALAt = func(w *os.File, b []byte, off int64) (int, error) { return w.ReadAt(b, off) }

// walChecksum continues the WAL's checksum (s0, s1) over b, read as 32-bit words, big-endian
// or little-endian as the WAL's magic number says. Each byte order has its loop of its own:
// through a binary.ByteOrder, each word was a call through an interface, and this loop, over
// the whole WAL at every open, was a sixth of a claim process's instructions. Each loop takes
// 32 bytes a turn, from a slice of exactly that length, so the compiler checks its bounds once
// a turn and not at each word: half the instructions of a loop of 8 bytes a turn (9 against
// 18 for each 8 bytes, callgrind), what every command beside a WAL pays for each of its pages.
func walChecksum(bigEndian bool, b []byte, s0, s1 uint32) (uint32, uint32) {
	if bigEndian {
		be := binary.BigEndian
		for ; len(b) >= 32; b = b[32:] {
			w := b[:32:32]
			s0 += be.Uint32(w[0:]) + s1
			s1 += be.Uint32(w[4:]) + s0
			s0 += be.Uint32(w[8:]) + s1
			s1 += be.Uint32(w[12:]) + s0
			s0 += be.Uint32(w[16:]) + s1
			s1 += be.Uint32(w[20:]) + s0
			s0 += be.Uint32(w[24:]) + s1
			s1 += be.Uint32(w[28:]) + s0
		}
		for ; len(b) >= 8; b = b[8:] {
			s0 += be.Uint32(b) + s1
			s1 += be.Uint32(b[4:]) + s0
		}
		return s0, s1
	}
	le := binary.LittleEndian
	for ; len(b) >= 32; b = b[32:] {
		w := b[:32:32]
		s0 += le.Uint32(w[0:]) + s1
		s1 += le.Uint32(w[4:]) + s0
		s0 += le.Uint32(w[8:]) + s1
		s1 += le.Uint32(w[12:]) + s0
		s0 += le.Uint32(w[16:]) + s1
		s1 += le.Uint32(w[20:]) + s0
		s0 += le.Uint32(w[24:]) + s1
		s1 += le.Uint32(w[28:]) + s0
	}
	for ; len(b) >= 8; b = b[8:] {
		s0 += le.Uint32(b) + s1
		s1 += le.Uint32(b[4:]) + s0
	}
	return s0, s1
}

// page reads page n (from 1) as last committed.
func (db *dbFile) page(n uint32) ([]byte, error) {
	off, ok := db.frames[n]
	if !ok {
		p := make([]byte, db.pageSize)
		_, err := db.f.ReadAt(p, int64(n-1)*int64(db.pageSize))
		return p, err
	}
	// The frame again, with its header: another volctl's checkpoint may have restarted the WAL
	// since readWAL, writing a new generation (new salts) over the frames it found.
	frame := make([]byte, 24+db.pageSize)
	if _, err := db.wal.ReadAt(frame, off-24); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint32(frame[0:4]) != n || !bytes.Equal(frame[8:16], db.salts) {
		return nil, errWALMoved
	}
	return frame[24:], nil
}

// errWALMoved is a WAL rewritten while identify read it: SQLite, under its locks, judges.
var errWALMoved = errors.New("the write-ahead log was restarted meanwhile")

// close closes the WAL read; the file is its caller's.
func (db *dbFile) close() {
	if db.wal != nil {
		db.wal.Close()
	}
}

// errNotReadable is a schema page identify cannot read as SQLite writes one.
var errNotReadable = errors.New("schema page not readable")

// maxSchemaPages bounds the pages a schema walk reads, against a damaged file's loops.
const maxSchemaPages = 1000

// schemaNames reads the names in the schema (sqlite_schema, a table b-tree rooted at page 1),
// tables and views first, as inspect lists them, at most shownNames+1 of them.
func (db *dbFile) schemaNames() ([]string, error) {
	type entry struct {
		other bool // not a table or a view
		name  string
	}
	var entries []entry
	todo := []uint32{1}
	for visited := 0; len(todo) > 0; visited++ {
		if visited == maxSchemaPages {
			return nil, errNotReadable
		}
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		p, err := db.page(n)
		if err != nil {
			return nil, err
		}
		at := 0
		if n == 1 {
			at = 100 // page 1 starts with the database header
		}
		if at+12 > len(p) {
			return nil, errNotReadable
		}
		kind, cells := p[at], int(binary.BigEndian.Uint16(p[at+3:]))
		ptrs := at + 8
		switch kind {
		case 0x05: // interior: children to read
			ptrs = at + 12
			todo = append(todo, binary.BigEndian.Uint32(p[at+8:]))
		case 0x0d: // leaf: the entries
		default:
			return nil, errNotReadable
		}
		for i := range cells {
			if ptrs+2*i+2 > len(p) {
				return nil, errNotReadable
			}
			cell := int(binary.BigEndian.Uint16(p[ptrs+2*i:]))
			if cell+4 > len(p) {
				return nil, errNotReadable
			}
			if kind == 0x05 {
				todo = append(todo, binary.BigEndian.Uint32(p[cell:]))
				continue
			}
			typ, name, ok := db.schemaEntry(p[cell:])
			if !ok {
				return nil, errNotReadable
			}
			entries = append(entries, entry{other: typ != "table" && typ != "view", name: name})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if a.other != b.other {
			if a.other {
				return 1
			}
			return -1
		}
		return bytes.Compare([]byte(a.name), []byte(b.name))
	})
	var names []string
	for _, e := range entries[:min(len(entries), shownNames+1)] {
		names = append(names, e.name)
	}
	return names, nil
}

// schemaEntry reads the type and name, the first two columns, of the schema row in the leaf
// cell c: its payload's size and rowid, then the record's header (its size, then the serial
// type of each column) and the columns. Both are short and read from the cell itself; a row
// whose name is not there (a payload spilled to overflow pages before it) is not ok.
func (db *dbFile) schemaEntry(c []byte) (typ, name string, ok bool) {
	size, a := sqliteVarint(c)
	_, b := sqliteVarint(c[a:])
	if a == 0 || b == 0 {
		return "", "", false
	}
	rec := c[a+b:]
	if local := db.localPayload(size); local < len(rec) {
		rec = rec[:local]
	}
	hsize, h := sqliteVarint(rec)
	if h == 0 || hsize > uint64(len(rec)) {
		return "", "", false
	}
	var cols [2]string
	at, body := h, int(hsize)
	for i := range cols {
		if at > body {
			return "", "", false // a header shorter than its own size's varint: damaged
		}
		st, k := sqliteVarint(rec[at:body])
		if k == 0 || st < 13 || st%2 == 0 {
			return "", "", false // not text
		}
		at += k
		// Compared before any conversion: a damaged serial type of 9 bytes is a length past
		// any int, which body+l would wrap.
		if (st-13)/2 > uint64(len(rec)-body) {
			return "", "", false
		}
		l := int((st - 13) / 2)
		cols[i] = string(rec[body : body+l])
		body += l
	}
	return cols[0], cols[1], true
}

// localPayload is how much of a leaf cell's payload of size bytes is in the cell, the rest
// being on overflow pages (the file format's "Cell Payload Overflow Pages").
func (db *dbFile) localPayload(size uint64) int {
	u := uint64(db.pageSize - db.reserved)
	if size <= u-35 {
		return int(size)
	}
	m := (u-12)*32/255 - 23
	if k := m + (size-m)%(u-4); k <= u-35 {
		return int(k)
	}
	return int(m)
}

// sqliteVarint decodes SQLite's big-endian varint (not Go's): up to 9 bytes, 7 bits in each of
// the first 8, all 8 in the ninth. n is 0 when b ends first.
func sqliteVarint(b []byte) (v uint64, n int) {
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
