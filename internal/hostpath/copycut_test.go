package hostpath

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A file is truncated while a snapshot copies it, as logrotate's copytruncate does to a log: it
// shrinks between copyData's SEEK_DATA, which found data at an offset, and its SEEK_HOLE from
// there, now past the end, which fails ENXIO. The copy holds the file as far as its data reached
// when looked at, as a file cut short between two reads is; before, the whole snapshot (or
// clone) failed "no such device or address".
func TestFileTruncatedWhileCopiedIsCopiedAsFarAsItReached(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "log"), filepath.Join(dir, "copy")
	first := bytes.Repeat([]byte("first range "), 4096)
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const second = 4 << 20 // a hole between the two ranges
	for _, w := range []struct {
		off  int64
		data []byte
	}{{0, first}, {second, []byte("second range")}} {
		if _, err := f.WriteAt(w.data, w.off); err != nil {
			t.Fatal(err)
		}
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	old := seekFile
	t.Cleanup(func() { seekFile = old })
	var holes, cut int
	seekFile = func(fd int, off int64, whence int) (int64, error) {
		if whence == unix.SEEK_HOLE {
			if holes++; holes == 2 { // the second range found; copytruncate now
				if err := f.Truncate(0); err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte("rewritten"), 0); err != nil {
					t.Fatal(err)
				}
				cut++
			}
		}
		return old(fd, off, whence)
	}
	if err := copyData(context.Background(), in, out); err != nil {
		t.Fatalf("copy of a file truncated and rewritten meanwhile: %v", err)
	}
	if cut != 1 {
		t.Fatalf("the file system reported %d ranges of data, not the two written: the test truncated nothing between two seeks", holes)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, first) {
		t.Errorf("the copy holds %d bytes, want the %d of the first range, copied before the file was cut short", len(got), len(first))
	}
}
