package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// volctl runs as root (it mounts), and root writes into the blocks an ext4 reserves for it (5%
// by default): a disk at "100%" in df, its non-root space used up, still takes every commit of
// volctl's. fsFull asks statfs's f_bavail, the space left to users other than root, so on such a
// disk any SQLite I/O error is taken for "full": the disk failing under the state dir (EIO on
// every read and write, as TestStateDiskIOErrorNamesTheDisk makes it) is said as "the file
// system holding the state dir is full: free space there", diskFailed's "check that disk ...
// dmesg" withheld, where a gigabyte or more is free to volctl. Now root's reserve counts for
// root (fsFull). Found by helper review62, reviewing this round's fix.
func TestFailedDiskWithOnlyRootsReserveFreeIsNotSaidFull(t *testing.T) {
	mnt, dev, shutDown := failingExt4(t)
	dir := filepath.Join(mnt, "state")
	ctx := context.Background()
	s, insert := openInserting(t, dir)
	// Fill what users other than root may use, as a host's logs and images do; root's reserve
	// stays free.
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	fill, err := os.Create(filepath.Join(mnt, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(st.Bavail)*st.Bsize - 16<<10; n > 0 {
		if _, err := fill.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fill.Sync(); err != nil {
		t.Fatal(err)
	}
	fill.Close()
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("free to root: %d KiB, to others: %d KiB", st.Bfree*uint64(st.Bsize)>>10, st.Bavail*uint64(st.Bsize)>>10)
	if err := insert("with-the-disk-at-100%"); err != nil {
		t.Fatalf("a commit as root with only root's reserve free: %v", err)
	}
	shutDown()
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s on a failed disk: no error", what)
			return
		}
		msg := err.Error()
		for _, want := range []string{dev, "dmesg"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s on a failed disk, %d KiB free to volctl: err = %q\nwant it to say %q (the disk failed)", what, st.Bfree*uint64(st.Bsize)>>10, msg, want)
			}
		}
		if strings.Contains(msg, "is full") {
			t.Errorf("%s on a failed disk, %d KiB free to volctl: err = %q\nsays the file system is full", what, st.Bfree*uint64(st.Bsize)>>10, msg)
		}
	}
	check("a write", insert("after"))
	check("a read", s.View(ctx, func(tx *Tx) error {
		_, err := tx.Volumes().List(VolumeFilter{})
		return err
	}))
	_, err = Open(ctx, dir)
	check("an open", err)
}
