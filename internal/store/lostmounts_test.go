package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// volctl.db is gone (removed to "start over", moved aside, a restore without it) while claims
// it recorded are still mounted below the state dir: Open refuses to start a new, empty state
// that would forget them, leaving them mounted with nothing to release them, names the mounts
// and what to do, and creates nothing. Once they are unmounted, a new state starts. Needs root,
// to mount.
func TestOpenRefusesANewStateOverMountsOfALostOne(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a target below the state dir")
	}
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	target := filepath.Join(dir, "publish", "web-0", "db", "rw-file-system-single-node-writer")
	if err := os.MkdirAll(target, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(target, syscall.MNT_DETACH) })
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, FileName+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	s, err = Open(ctx, dir)
	if err == nil {
		s.Close()
		t.Fatal("Open started a new state with a claim of the lost one still mounted below it")
	}
	for _, want := range []string{filepath.Join(dir, FileName) + " is missing or empty", target, "restore volctl.db", "umount"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused, Open made %s anyway: %v", FileName, err)
	}
	if err := syscall.Unmount(target, 0); err != nil {
		t.Fatal(err)
	}
	// The mount gone, the state dir still held a database (its path record says so:
	// TestOpenRefusesAnEmptyDatabaseInAStateDirThatHeldOne); removing the record starts afresh.
	record := filepath.Join(dir, PathFileName)
	if s, err = Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "remove "+record) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open once the mount is gone: %v, want it refused until %s is removed", err, record)
	}
	opensOnceRecordRemoved(t, dir, record, "the mount and the path record are gone")
}
