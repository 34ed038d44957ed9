package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// twoLayerOverlay mounts an overlay file system at a temp dir whose lower and upper layers are
// on two tmpfs of their own, as a container's root is (its image on one file system, its
// writable layer on another), with n files f0..f(n-1) in its lower layer (its image's files),
// and returns its mount point and the lower layer's directory; everything is unmounted when
// the test ends. It skips, saying why, where no overlay can be mounted.
func twoLayerOverlay(t *testing.T, n int) (mnt, lowerDir string) {
	t.Helper()
	hostpathtest.RequireMount(t)
	d := t.TempDir()
	lowerFS, upperFS, m := filepath.Join(d, "lfs"), filepath.Join(d, "ufs"), filepath.Join(d, "m")
	for _, dir := range []string{lowerFS, upperFS, m} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mount := func(src, target, fstype, data string) {
		t.Helper()
		if err := unix.Mount(src, target, fstype, 0, data); err != nil {
			t.Fatalf("precondition: mounting %s at %s: %v", fstype, target, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", target, err)
			}
		})
	}
	mount("tmpfs", lowerFS, "tmpfs", "size=1m")
	mount("tmpfs", upperFS, "tmpfs", "size=1m")
	lower, upper, work := filepath.Join(lowerFS, "lower"), filepath.Join(upperFS, "upper"), filepath.Join(upperFS, "work")
	for _, dir := range []string{lower, upper, work} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(lower, fmt.Sprintf("f%d", i)), []byte("an image's file\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("overlay", m, "overlay", 0, "lowerdir="+lower+",upperdir="+upper+",workdir="+work); err != nil {
		t.Skipf("this kernel or container mounts no overlay file system here (%v): the overlay's lock naming cannot be tested", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", m, err)
		}
	})
	return m, lower
}

// holdLockFileInAnotherProcess has flock(1), in a process group of its own, take the lock file
// at path exclusively, and returns it once a non-blocking flock of the file from here is refused
// (not through /proc/locks, which is what is under test).
func holdLockFileInAnotherProcess(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skipf("flock(1) (util-linux) is not installed, and a process of another program must hold the lock: %v", err)
	}
	cmd := exec.Command(bin, "--exclusive", path, "sleep", "120")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, err := os.OpenFile(path, os.O_RDONLY, 0); err == nil {
			err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("precondition: flock(1), pid %d, does not hold %s after 10s", cmd.Process.Pid, path)
		}
	}
}

// A state dir on an overlay file system whose layers are on two file systems (a container's
// root: its image on one, its writable layer on another; the store opens there, and volctl's
// own FlockPids knows such a dir, recheck39b) has every lock wait blind to who holds the lock:
// /proc/locks names a flock there by the layer's device, and the wait's look for holders
// (locks.go lockHolders -> store.FlockHolders -> lockHolders) matches only the device stat
// gives for the overlay's file. A command waiting behind a volctl stopped with ^Z while it holds
// a volume's lock says "another volctl is working on it", names no pid, and never gives up: the
// give-up once every holder has been stopped for stoppedWait (docs/architecture.md, Lock waits)
// counts only holders it found, so in a script it waits, silently, for as long as its context
// lasts, which for a command is for ever. Correct: the holder is found there too (as it is on a
// plain directory and on an overlay on one file system), the wait names it, and gives up once it
// has been stopped for stoppedWait, saying to resume or end it. Found by helper review75.
func TestLockWaitOnATwoLayerOverlayStateDirNamesAndGivesUpOnAStoppedHolder(t *testing.T) {
	state, _ := twoLayerOverlay(t, 0)
	l, err := newLocker(state)
	if err != nil {
		t.Fatal(err)
	}
	l.stoppedWait = 500 * time.Millisecond
	holder := holdLockFileInAnotherProcess(t, filepath.Join(l.dir, volumeLockPrefix+"v.lock"))
	pid := holder.Process.Pid
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	timedOut, err := volumeLockRefused(t, l, 8*time.Second, pid)
	if timedOut {
		t.Fatalf("the wait behind pid %d, stopped for 7s and more, ran until its context ended: %v; want it to give up after stoppedWait (%s), naming the holder", pid, err, l.stoppedWait)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", pid), "stopped", fmt.Sprintf("kill -CONT %d", pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the wait behind a stopped holder: %v; want it to say %q", err, want)
		}
	}
}

// volumeLockRefused asks l for volume "v"'s lock, which the process pid holds, within timeout:
// a lock taken fails the test; it returns the refusal err, and whether it came only as the wait's
// context ended (timedOut).
func volumeLockRefused(t *testing.T, l *locker, timeout time.Duration, pid int) (timedOut bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	unlock, err := l.volume(ctx, "v")
	if err == nil {
		unlock()
		t.Fatalf("took the lock of volume \"v\" while pid %d holds it", pid)
	}
	return ctx.Err() != nil, err
}
