package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The disk under the state dir fails: every read and write of it returns EIO (an ext4 shut
// down, as the kernel does it on a journal error, or a disk gone from the bus). Whatever meets
// it, a transaction of a store already open, a read beginning, or a new Open, says the disk
// failed, names it (the device under the state dir) and what to do: not SQLite's words alone,
// and never the advice for a damaged file (move the database aside, restore a backup), which
// for a database that is whole on a disk that fails would throw away the state of every claim
// recorded since the backup. Needs root, for a loop-mounted ext4.
func TestStateDiskIOErrorNamesTheDisk(t *testing.T) {
	mnt, dev, shutDown := failingExt4(t)
	dir := filepath.Join(mnt, "state")
	ctx := context.Background()
	s, insert := openInserting(t, dir)
	shutDown()

	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s on a failed disk: no error", what)
			return
		}
		msg := err.Error()
		for _, want := range []string{s.Path(), "I/O error", dev, "dmesg", "volctl reconcile"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s on a failed disk: err = %q\nwant it to say %q", what, msg, want)
			}
		}
		if strings.Contains(msg, damagedAdvice) {
			t.Errorf("%s on a failed disk: err = %q\nwant no advice to move the database aside: the file is not known to be damaged", what, msg)
		}
	}
	check("a write", insert("after"))
	check("a read", s.View(ctx, func(tx *Tx) error {
		_, err := tx.Volumes().List(VolumeFilter{})
		return err
	}))
	_, err := Open(ctx, dir)
	check("an open", err)
}

// failingExt4 mounts a small ext4 on a loop device and returns where, the device, and a
// function that shuts the file system down (EXT4_IOC_SHUTDOWN, journal not flushed): from then
// on every read and write of it fails with EIO, as on a disk that failed.
func failingExt4(t *testing.T) (mnt, dev string, shutDown func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to loop-mount an ext4 to fail")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s, to make an ext4 to fail: %v", tool, err)
		}
	}
	// In the test binary's run dir (os.TempDir; t.TempDir is elsewhere): a test binary that
	// dies with the device attached and mounted leaves neither (internal/testproc).
	dir, err := os.MkdirTemp("", "disk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Skipf("cannot attach a loop device: %v", err)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	if out, err := exec.Command("mkfs.ext4", "-q", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", dev, err, out)
	}
	mnt = filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	// errors=remount-ro, as distributions mount their disks: an error the kernel meets makes
	// the file system read-only (TestStateFileSystemTurnedReadOnlyIsNamed).
	if err := unix.Mount(dev, mnt, "ext4", 0, "errors=remount-ro"); err != nil {
		t.Skipf("cannot mount an ext4: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt, dev, func() {
		t.Helper()
		const ext4IOCShutdown = 0x8004587d // _IOR('X', 125, __u32)
		const noLogFlush = 2               // EXT4_GOING_FLAGS_NOLOGFLUSH
		f, err := os.Open(mnt)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		flags := uint32(noLogFlush)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), ext4IOCShutdown, uintptr(unsafe.Pointer(&flags))); errno != 0 {
			t.Fatalf("shutting down the ext4 at %s: %v", mnt, errno)
		}
	}
}

// The state dir's file system turns read-only under a store already open: the kernel met an
// error on the ext4 holding it (errors=remount-ro; its mount still says rw, as Open's own
// check knows). Every write after, the first (SQLite's "disk I/O error") and the next ones
// (its "attempt to write a readonly database", which the store took for a write inside View, a
// bug of volctl's), says the file system turned read-only, names the state dir and what to do,
// and matches ErrReadOnlyFS, as a write to a state dir opened on a read-only file system does.
// Needs root, for a loop-mounted ext4.
func TestStateFileSystemTurnedReadOnlyIsNamed(t *testing.T) {
	mnt, dev, _ := failingExt4(t)
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")
	if _, err := os.Stat(trigger); err != nil {
		t.Skipf("needs ext4's %s, to make the file system meet an error: %v", trigger, err)
	}
	dir := filepath.Join(mnt, "state")
	_, insert := openInserting(t, dir)
	if err := os.WriteFile(trigger, []byte("volctl test\n"), 0); err != nil {
		t.Fatalf("making the ext4 meet an error: %v", err)
	}
	for _, id := range []string{"first", "second", "third"} {
		err := insert(id)
		if err == nil {
			t.Fatalf("write %q on a file system turned read-only: no error", id)
		}
		msg := err.Error()
		for _, want := range []string{dir, "read-only", "dmesg", "fsck", "volctl reconcile"} {
			if !strings.Contains(msg, want) {
				t.Errorf("write %q on a file system turned read-only: err = %q\nwant it to say %q", id, msg, want)
			}
		}
		if !errors.Is(err, ErrReadOnlyFS) {
			t.Errorf("write %q on a file system turned read-only: err = %q, want it to match ErrReadOnlyFS", id, msg)
		}
		if strings.Contains(msg, errReadOnly.Error()) {
			t.Errorf("write %q on a file system turned read-only: err = %q\nwant no word of a write inside View", id, msg)
		}
	}
}

// openInserting opens the store in dir, closed at the test's end, and returns it and a write
// that inserts a volume, done once.
func openInserting(t *testing.T, dir string) (*Store, func(id string) error) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	insert := func(id string) error {
		return s.Update(ctx, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: id, PluginID: "p", State: VolumeReady})
		})
	}
	if err := insert("before"); err != nil {
		t.Fatal(err)
	}
	return s, insert
}
