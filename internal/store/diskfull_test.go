package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The state dir's file system fills up: a write fails naming the database and saying the disk
// is full, records nothing, and once space is freed the same store writes again and reads back
// exactly what was committed. A WAL that cannot grow and a checkpoint that cannot extend the
// database both meet it. Needs root, for a small tmpfs.
func TestDiskFullRecordsNothingAndRecovers(t *testing.T) {
	t.Parallel()
	mnt := smallTmpfs(t)
	s, err := Open(context.Background(), filepath.Join(mnt, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	insert := func(id string) error {
		return s.Update(ctx, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: id, PluginID: "p", State: VolumeReady, Secrets: map[string]string{"k": strings.Repeat("s", 2000)}})
		})
	}
	if err := insert("before"); err != nil {
		t.Fatal(err)
	}
	fill := fillUp(t, mnt)
	// Writes until one fails: the WAL may have room for a few first.
	var failed error
	var committed []string
	for i := 0; i < 200 && failed == nil; i++ {
		id := fmt.Sprintf("v%d", i)
		if failed = insert(id); failed == nil {
			committed = append(committed, id)
		}
	}
	if failed == nil {
		t.Fatal("200 writes on a full file system all succeeded")
	}
	if want := "state " + s.Path() + ": "; !strings.Contains(failed.Error(), want) || !strings.Contains(failed.Error(), "disk is full") {
		t.Errorf("write on a full disk: err = %q, want it to name %s and say the disk is full", failed, s.Path())
	}
	// And what to do, not SQLite's words alone.
	if want := "free space there, then run the command again"; !strings.Contains(failed.Error(), want) {
		t.Errorf("write on a full disk: err = %q, want it to say what to do: %q", failed, want)
	}
	// A reader still reads, and sees exactly what committed.
	list := func() []string {
		t.Helper()
		var ids []string
		view(t, s, func(tx *Tx) error {
			vs, err := tx.Volumes().List(VolumeFilter{})
			for _, v := range vs {
				ids = append(ids, v.ID)
			}
			return err
		})
		return ids
	}
	want := append([]string{"before"}, committed...)
	if got := list(); len(got) != len(want) {
		t.Fatalf("volumes on the full disk = %v, want %v", got, want)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := insert("after"); err != nil {
		t.Fatalf("write once space is freed: %v", err)
	}
	if got := list(); len(got) != len(want)+1 {
		t.Fatalf("volumes after space is freed = %v, want %v and after", got, want)
	}
}

// smallTmpfs mounts a 1 MiB tmpfs for the test to fill, skipping, saying why, where it cannot.
func smallTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs to fill")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt
}

// fillUp fills what is left of the file system at mnt with a file, and returns its path.
func fillUp(t *testing.T, mnt string) string {
	t.Helper()
	fill := filepath.Join(mnt, "fill")
	f, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return fill
		}
	}
}

// A new state dir on a full file system: Open fails naming the database and saying what to
// do, not with SQLite's "database or disk is full (13)" alone.
func TestDiskFullAtOpenSaysWhatToDo(t *testing.T) {
	t.Parallel()
	mnt := smallTmpfs(t)
	fillUp(t, mnt)
	dir := filepath.Join(mnt, "state")
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("Open on a full file system succeeded")
	}
	if want := "free space there, then run the command again"; !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open on a full file system: %q, want it to name %s and say %q", err, dir, want)
	}
}
