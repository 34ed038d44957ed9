package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bindView bind-mounts dir at a new directory, unmounted when the test ends, and skips, saying
// why, where mounting is not allowed.
func bindView(t *testing.T, dir string) string {
	t.Helper()
	b := t.TempDir()
	if err := unix.Mount(dir, b, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount a state dir: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(b, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", b, err)
		}
	})
	return b
}

// The state dir used at one path and then reached through a bind of it at another: the
// mounts volctl made are recorded under the first path, where the agent and every other command
// look for them. A command through the bind would stage and publish under the second path,
// which the others see as nothing mounted (a reconcile restores the claim a second time; a
// release there leaves the mounts made through the bind, with the plugin's staging, for
// good). So writes through the bind are refused, naming both paths and the one to use; reads
// (status, a dashboard) work, and so does everything through the first path.
func TestWritesThroughABindOfTheStateDirAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	update(t, a, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })

	bind := bindView(t, dir)
	b, err := Open(ctx, bind)
	if err != nil {
		t.Fatalf("open through the bind (reads must work): %v", err)
	}
	defer b.Close()
	if kinds := eventKinds(t, b); len(kinds) != 1 || kinds[0] != "first" {
		t.Fatalf("read through the bind: %v, want [first]", kinds)
	}
	err = b.Update(ctx, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "through-bind"}) })
	if err == nil {
		t.Fatal("a write through a bind of the state dir was accepted: its mounts would be recorded under another path than the agent's")
	}
	if !errors.Is(err, ErrOtherPath) || b.CheckWritable() == nil {
		t.Errorf("error %v (CheckWritable %v) is not ErrOtherPath", err, b.CheckWritable())
	}
	for _, want := range []string{bind, dir, "VOLCTL_STATE_DIR=" + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// The first path still writes, and a process opening it anew does too.
	update(t, a, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	c, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	update(t, c, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "third"}) })
	kinds := eventKinds(t, c)
	slices.Sort(kinds)
	if strings.Join(kinds, ",") != "first,second,third" {
		t.Errorf("events %v, want first, second and third, nothing written through the bind", kinds)
	}
}

// A state dir moved (or copied) to another path is used there: the path it was used at is no
// longer the same directory, so nothing is refused and the new path is the one recorded.
func TestAStateDirMovedIsUsedAtItsNewPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	moved := movedStateDir(t)
	m, err := Open(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	update(t, m, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "moved"}) })
	if got, err := os.ReadFile(filepath.Join(moved, PathFileName)); err != nil || strings.TrimSpace(string(got)) != moved {
		t.Errorf("%s holds %q (%v), want %s", PathFileName, got, err, moved)
	}
}

// movedStateDir makes a state dir, writes to it through its path, and moves it: it returns the
// new path, where the recorded path no longer leads.
func movedStateDir(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	old := filepath.Join(parent, "old")
	s, err := Open(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(parent, "new")
	if err := os.Rename(old, moved); err != nil {
		t.Fatal(err)
	}
	return moved
}

// The state dir's ext4 turned read-only under volctl after an error (errors=remount-ro: the
// kernel marks it emergency read-only, and statfs still says read-write): every open failed
// ("open state: open .../volctl.db: read-only file system"), status and the dashboard with it,
// when the operator needs them most. It opens for reading, as a read-only file system does,
// and every write fails with ErrReadOnlyFS naming the directory.
func TestStateDirTurnedReadOnlyByAnErrorOpensForReading(t *testing.T) {
	mnt, dev, _ := failingExt4(t)
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT, "errors=remount-ro"); err != nil {
		t.Skipf("cannot remount the ext4 errors=remount-ro: %v", err)
	}
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")
	if _, err := os.Stat(trigger); err != nil {
		t.Skipf("needs the kernel's %s to make the ext4 fail read-only: %v", trigger, err)
	}
	ctx := context.Background()
	dir := filepath.Join(mnt, "state")
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trigger, []byte("1"), 0o200); err != nil {
		t.Skipf("cannot trigger an ext4 error: %v", err)
	}
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatalf("open after the file system turned read-only: %v", err)
	}
	defer r.Close()
	if kinds := eventKinds(t, r); len(kinds) != 1 || kinds[0] != "first" {
		t.Errorf("events read: %v, want [first]", kinds)
	}
	err = r.Update(ctx, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "second"}) })
	if !errors.Is(err, ErrReadOnlyFS) || !strings.Contains(fmt.Sprint(err), dir) || !strings.Contains(fmt.Sprint(err), "fsck") {
		t.Errorf("write: %v, want ErrReadOnlyFS naming %s and the repair", err, dir)
	}
}

// Two processes open a new state dir at once through two paths (the dir and a bind of it),
// both first writers: each finds no path recorded. The one that records first uses the state
// dir; the other, recording after it, must check against that record and refuse writes. Before,
// its record was renamed over the first's and both wrote, each making its mounts under its own
// path.
func TestFirstOpensThroughTwoPathsAtOnceLeaveOneWriter(t *testing.T) {
	dir := t.TempDir()
	opensAtOnceLeaveOneWriter(t, dir, bindView(t, dir))
}

// opensAtOnceLeaveOneWriter opens the state dir through path and, once that open has read the
// record and found it must write one, through bind (another path to it), which records first:
// the open through bind must write, and the one through path refuse writes with ErrOtherPath
// naming both paths and the one to use, and bind must be the path recorded.
func opensAtOnceLeaveOneWriter(t *testing.T, path, bind string) {
	t.Helper()
	ctx := context.Background()
	var b *Store
	beforePathRecord = func() {
		// The process through path has read the record; the one through the bind reads it too,
		// and records first.
		beforePathRecord = nil
		var err error
		if b, err = Open(ctx, bind); err != nil {
			t.Errorf("open through the bind: %v", err)
		}
	}
	t.Cleanup(func() { beforePathRecord = nil })
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if b == nil {
		t.Fatal("the second open did not run while the first was recording its path")
	}
	defer b.Close()
	if err := b.CheckWritable(); err != nil {
		t.Errorf("the first to record (through %s) cannot write: %v", bind, err)
	}
	err = a.CheckWritable()
	if err == nil {
		t.Fatalf("both opens write, through %s and through %s: each would make its mounts under its own path", bind, path)
	}
	for _, want := range []string{bind, path, "VOLCTL_STATE_DIR=" + bind} {
		if !errors.Is(err, ErrOtherPath) || !strings.Contains(err.Error(), want) {
			t.Errorf("the second to record (through %s): %v; want ErrOtherPath naming %q, recorded first", path, err, want)
		}
	}
	if got, err := os.ReadFile(filepath.Join(path, PathFileName)); err != nil || strings.TrimSpace(string(got)) != bind {
		t.Errorf("%s holds %q (%v), want %s, recorded first", PathFileName, got, err, bind)
	}
}

// A state dir moved, then opened at once through its new path and through a bind of it: both
// find the record of the old path, which no longer leads to the directory, and both replace it.
// Before, each replaced it with an ordinary rename, the last winning, and both wrote, each making
// its mounts under its own path. The replacement is one process's at a time: the other reads
// the record made meanwhile and refuses writes, naming both paths.
func TestAMovedStateDirOpenedThroughTwoPathsAtOnceLeavesOneWriter(t *testing.T) {
	moved := movedStateDir(t)
	opensAtOnceLeaveOneWriter(t, moved, bindView(t, moved))
}

// A process stopped while it holds the path lock (recording the state dir's path) keeps every
// other first open from checking its path: after the wait, the open reads and refuses writes,
// naming the lock's holder and what to do, rather than record unchecked.
func TestThePathLockHeldTooLongRefusesWritesNamingTheHolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Another process holds the lock on the directory (flock(1) stands in for a volctl stopped
	// while it records the path), and says so once it does.
	holder := exec.Command("flock", "--exclusive", dir, "sh", "-c", "echo held; exec sleep 60")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Skipf("needs flock(1) to hold the state dir's lock from another process: %v", err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("flock(1) did not take the lock on %s: %q, %v", dir, line, err)
	}
	s, err := Open(ctx, dir, WithBusyTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatalf("open with the path lock held (reads must work): %v", err)
	}
	defer s.Close()
	err = s.CheckWritable()
	for _, want := range []string{dir, PathFileName, "try again", fmt.Sprintf("pid %d", holder.Process.Pid)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("writes with the path lock held elsewhere: %v; want an error naming %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, PathFileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s recorded without the path lock: %v", PathFileName, err)
	}
}
