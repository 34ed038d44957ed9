package store

import (
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// walOfCommits is the WAL of a live store after n commits, each with its state mark, and the
// database file beside it.
func walOfCommits(t *testing.T, n int) (db, wal []byte) {
	t.Helper()
	s := newStore(t)
	commitVolumes(t, s, "v", n)
	return readFile(t, s.Path()), readFile(t, s.Path()+"-wal")
}

// expectedFrames reads wal as the file format describes, one frame at a time from a byte
// slice: the offset of each page's last committed copy and the committed frames' state marks
// (seq only). bigEndian is the order of the checksums' words.
func expectedFrames(wal []byte, pageSize int, bigEndian bool) (map[uint32]int64, []int64) {
	word := binary.LittleEndian.Uint32
	if bigEndian {
		word = binary.BigEndian.Uint32
	}
	sum := func(b []byte, s0, s1 uint32) (uint32, uint32) {
		for i := 0; i < len(b); i += 8 {
			s0 += word(b[i:i+4]) + s1
			s1 += word(b[i+4:i+8]) + s0
		}
		return s0, s1
	}
	s0, s1 := sum(wal[:24], 0, 0)
	frames, committed := map[uint32]int64{}, map[uint32]int64{}
	var marks, committedMarks []int64
	for off := walHeaderSize; off+24+pageSize <= len(wal); off += 24 + pageSize {
		f := wal[off : off+24+pageSize]
		if string(f[8:16]) != string(wal[16:24]) {
			break
		}
		s0, s1 = sum(f[:8], s0, s1)
		s0, s1 = sum(f[24:], s0, s1)
		if s0 != binary.BigEndian.Uint32(f[16:20]) || s1 != binary.BigEndian.Uint32(f[20:24]) {
			break
		}
		frames[binary.BigEndian.Uint32(f[0:4])] = int64(off + 24)
		if _, seq, ok := parseMark(f[24:]); ok {
			marks = append(marks, seq)
		}
		if binary.BigEndian.Uint32(f[4:8]) != 0 {
			maps.Copy(committed, frames)
			committedMarks = slices.Clone(marks)
		}
	}
	return committed, committedMarks
}

// bigEndianWAL is wal with its checksums made again over big-endian words, as SQLite writes
// them on a big-endian machine (magic 0x377f0683).
func bigEndianWAL(wal []byte, pageSize int) []byte {
	be := slices.Clone(wal)
	binary.BigEndian.PutUint32(be[0:4], 0x377f0683)
	var s0, s1 uint32
	sum := func(b []byte) {
		for i := 0; i < len(b); i += 8 {
			s0 += binary.BigEndian.Uint32(b[i:]) + s1
			s1 += binary.BigEndian.Uint32(b[i+4:]) + s0
		}
	}
	sum(be[:24])
	binary.BigEndian.PutUint32(be[24:28], s0)
	binary.BigEndian.PutUint32(be[28:32], s1)
	for off := walHeaderSize; off+24+pageSize <= len(be); off += 24 + pageSize {
		f := be[off : off+24+pageSize]
		sum(f[:8])
		sum(f[24:])
		binary.BigEndian.PutUint32(f[16:20], s0)
		binary.BigEndian.PutUint32(f[20:24], s1)
	}
	return be
}

// readWALOf runs readWAL over wal, beside db, as Open's checks do.
func readWALOf(t *testing.T, db, wal []byte) *dbFile {
	t.Helper()
	dir := t.TempDir()
	writeState(t, dir, db, wal, nil)
	path := filepath.Join(dir, FileName)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d := &dbFile{f: f, pageSize: pageSizeOf(binary.BigEndian.Uint16(db[16:18])), reserved: int(db[20]), findMarks: true}
	t.Cleanup(d.close)
	d.readWAL(path+"-wal", int64(len(wal)))
	return d
}

// TestReadWALFindsWhatTheFormatSays: the committed frames and state marks readWAL finds are
// the ones the file format gives, for checksums of either byte order, for a WAL longer than one
// read (walReadBytes), and for one torn inside a read, where what comes before the torn frame
// is kept up to its last commit.
func TestReadWALFindsWhatTheFormatSays(t *testing.T) {
	t.Parallel()
	db, wal := walOfCommits(t, 30)
	pageSize := pageSizeOf(binary.BigEndian.Uint16(db[16:18]))
	frameSize := 24 + pageSize
	if frames := (len(wal) - walHeaderSize) / frameSize; frames*frameSize < 2*walReadBytes {
		t.Fatalf("the WAL holds %d frames, want more than two reads' worth", frames)
	}
	torn := slices.Clone(wal)
	tornAt := walHeaderSize + (walReadBytes/frameSize+3)*frameSize // inside the second read
	torn[tornAt+24+100] ^= 0xff
	for name, c := range map[string]struct {
		wal       []byte
		bigEndian bool
	}{
		"little-endian":      {wal, false},
		"big-endian":         {bigEndianWAL(wal, pageSize), true},
		"torn":               {torn, false},
		"torn, big-endian":   {bigEndianWAL(torn, pageSize)[:len(torn)], true},
		"cut inside a frame": {wal[:len(wal)-frameSize/2], false},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "torn, big-endian" {
				// bigEndianWAL signs every frame again, the torn one too: tear it after.
				c.wal = slices.Clone(c.wal)
				c.wal[tornAt+24+100] ^= 0xff
			}
			wantFrames, wantMarks := expectedFrames(c.wal, pageSize, c.bigEndian)
			if len(wantFrames) == 0 || len(wantMarks) == 0 {
				t.Fatalf("the format gives no committed frame or mark: the test's WAL is wrong")
			}
			d := readWALOf(t, db, c.wal)
			if !maps.Equal(d.frames, wantFrames) {
				t.Errorf("readWAL found %d pages' frames %v, want %d: %v", len(d.frames), d.frames, len(wantFrames), wantFrames)
			}
			var seqs []int64
			for _, m := range d.marks {
				seqs = append(seqs, m.seq)
			}
			if !slices.Equal(seqs, wantMarks) {
				t.Errorf("readWAL found the marks %v, want %v", seqs, wantMarks)
			}
		})
	}
}

// TestReadWALReadsFewTimes: every command reads its WAL at Open (the pair check), up to
// walAutocheckpoint pages of it; one read per frame was a hundred system calls a command.
func TestReadWALReadsFewTimes(t *testing.T) { // not parallel: it replaces readWALAt
	db, wal := walOfCommits(t, 30)
	reads := 0
	orig := readWALAt
	readWALAt = func(w *os.File, b []byte, off int64) (int, error) { reads++; return orig(w, b, off) }
	t.Cleanup(func() { readWALAt = orig })
	d := readWALOf(t, db, wal)
	if len(d.frames) == 0 {
		t.Fatal("readWAL found no committed frame")
	}
	if most := len(wal)/walReadBytes + 1; reads > most {
		t.Errorf("readWAL read the WAL of %d bytes (%d frames) in %d reads, want at most %d", len(wal),
			(len(wal)-walHeaderSize)/(24+pageSizeOf(binary.BigEndian.Uint16(db[16:18]))), reads, most)
	}
}

// TestWALChecksumOverEveryLength checks walChecksum, which takes 32 bytes a turn, against the
// file format's definition word pair by word pair, in both byte orders, over every length of
// whole word pairs up to a few turns and a page's, from a running checksum.
func TestWALChecksumOverEveryLength(t *testing.T) {
	t.Parallel()
	b := make([]byte, 4096+24)
	for i := range b {
		b[i] = byte(i*131 + i>>8)
	}
	for _, bigEndian := range []bool{false, true} {
		var order binary.ByteOrder = binary.LittleEndian
		if bigEndian {
			order = binary.BigEndian
		}
		for _, n := range append([]int{4096, 4096 + 24}, func() (ns []int) {
			for n := 0; n <= 104; n += 8 {
				ns = append(ns, n)
			}
			return ns
		}()...) {
			w0, w1 := uint32(0x12345678), uint32(0x9abcdef0)
			for i := 0; i+8 <= n; i += 8 {
				w0 += order.Uint32(b[i:]) + w1
				w1 += order.Uint32(b[i+4:]) + w0
			}
			if s0, s1 := walChecksum(bigEndian, b[:n], 0x12345678, 0x9abcdef0); s0 != w0 || s1 != w1 {
				t.Errorf("big-endian %t, %d bytes: checksum %08x %08x, want %08x %08x", bigEndian, n, s0, s1, w0, w1)
			}
		}
	}
}
