package testproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	Start()
	os.Exit(m.Run())
}

// leftoverEnv makes TestLeftoverMaker, in a test binary TestKilledTestBinaryLeavesNothing
// starts, leave processes and a mount behind and wait to be killed.
const leftoverEnv = "VOLCTL_TESTPROC_LEFTOVERS"

// leftovers is what TestLeftoverMaker left, as it reports it on its stdout.
type leftovers struct {
	Dir   string // its run directory (its TMPDIR)
	Pids  []int
	Mount string // "" where this host cannot bind-mount
	Loop  string // a loop device (loop3) on Image, mounted at LoopMount; "" where none can be had
	Image string
	// LoopMount is where an ext4 on Loop is mounted; "" where it cannot be (the device is then
	// only attached).
	LoopMount string
}

// A test binary killed outright (as -timeout ends one: no cleanup runs) leaves nothing: neither
// a plugin it started in a session of its own with the filtered environment the agent gives
// plugins, nor an ordinary child, nor a bind mount under its temp dir, nor a loop device on an
// image in its temp dir with a file system on it mounted there (as the store's disk tests
// make), nor the dir.
func TestKilledTestBinaryLeavesNothing(t *testing.T) {
	base, err := os.MkdirTemp("/tmp", "testproc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeftoverMaker$", "-test.count=1")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, ownerEnv+"=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	// Not part of this test binary's run: the test binary killed is a top-level one.
	cmd.Env = append(env, leftoverEnv+"=1", "TMPDIR="+base)
	// Its stderr is the watchdog's too: Wait returns once the watchdog is done.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the test binary made no leftovers: %v\n%s", err, stderr.Bytes())
	}
	var left leftovers
	if err := json.Unmarshal(line, &left); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	t.Cleanup(func() { // whatever the outcome, nothing of this test stays
		for _, pid := range left.Pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		if left.Mount != "" {
			unix.Unmount(left.Mount, unix.MNT_DETACH)
		}
		if left.LoopMount != "" {
			unix.Unmount(left.LoopMount, unix.MNT_DETACH)
		}
		detachIfOn(left.Loop, left.Image)
		os.RemoveAll(left.Dir)
	})

	start := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	t.Logf("swept in %v", time.Since(start))

	for _, pid := range left.Pids {
		if alive(pid) {
			t.Errorf("process %d outlived the killed test binary", pid)
		}
	}
	if left.Mount != "" {
		if mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(left.Mount)); err != nil || len(mounts) > 0 {
			t.Errorf("%s: still mounted after the test binary was killed (%v)", left.Mount, err)
		}
	}
	if left.Loop != "" {
		if backing, ok := loopBacking(left.Loop); ok && backing == left.Image {
			t.Errorf("loop device /dev/%s is still attached to %s after the test binary was killed", left.Loop, backing)
		}
	} else {
		t.Log("no loop device could be attached here: the loop device sweep is not exercised")
	}
	if _, err := os.Stat(left.Dir); !os.IsNotExist(err) {
		t.Errorf("the test binary's temp dir %s is still there (%v)", left.Dir, err)
	}
	want := "outlived its test binary: killed 2 processes"
	if left.Loop != "" {
		want += ", unmounted " + strconv.Itoa(btoi(left.Mount != "")+btoi(left.LoopMount != "")) + " mounts, detached 1 loop devices"
	}
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("the test binary's output does not say what was left (%q):\n%s", want, stderr.Bytes())
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// attachLoop attaches a free loop device to a new 32 MiB image at img and returns its name
// (loop3), or "" and why not where this host has no loop devices to give.
func attachLoop(img string) (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("needs root")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		return "", err
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return "", err
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		return "", err
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup: %v: %s", err, out)
	}
	return filepath.Base(strings.TrimSpace(string(out))), nil
}

// detachIfOn detaches loop device dev if it is still attached to img (and not, since, to
// another test's image).
func detachIfOn(dev, img string) {
	if backing, ok := loopBacking(dev); dev != "" && ok && backing == img {
		exec.Command("losetup", "-d", "/dev/"+dev).Run()
	}
}

// alive reports whether pid runs: not gone, not a zombie waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !zombie(stat)
}

// TestLeftoverMaker leaves two processes and a mount behind, says what they are and waits to be
// killed: a test binary's test that never ends.
func TestLeftoverMaker(t *testing.T) {
	if os.Getenv(leftoverEnv) == "" {
		t.Skip("run by TestKilledTestBinaryLeavesNothing")
	}
	left := leftovers{Dir: os.TempDir()}
	// A plugin as the agent starts one: a session of its own, an environment of PATH and TMPDIR.
	plugin := exec.Command("sleep", "600")
	plugin.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	plugin.Dir = "/"
	plugin.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	child := exec.Command("sleep", "600")
	for _, c := range []*exec.Cmd{plugin, child} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		left.Pids = append(left.Pids, c.Process.Pid)
	}
	if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "mounts-") // as hostpathtest.MountDir's (t.TempDir is GOTMPDIR's)
		if err != nil {
			t.Fatal(err)
		}
		src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
		for _, d := range []string{src, dst} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err == nil {
			left.Mount = dst
		}
		// As the store's disk tests: an ext4 on a loop device over an image in the run dir,
		// mounted there.
		left.Image = filepath.Join(dir, "disk.img")
		if dev, err := attachLoop(left.Image); err != nil {
			t.Logf("no loop device: %v", err)
		} else {
			left.Loop = dev
			mnt := filepath.Join(dir, "disk")
			if err := os.Mkdir(mnt, 0o700); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mkfs.ext4", "-q", "/dev/"+dev).CombinedOutput(); err != nil {
				t.Logf("mkfs.ext4 /dev/%s: %v: %s", dev, err, out)
			} else if err := unix.Mount("/dev/"+dev, mnt, "ext4", 0, ""); err != nil {
				t.Logf("mount /dev/%s: %v", dev, err)
			} else {
				left.LoopMount = mnt
			}
		}
	}
	b, _ := json.Marshal(left)
	os.Stdout.Write(append(b, '\n'))
	time.Sleep(time.Hour)
}

// A run directory whose lock nobody holds (its test binary and watchdog both killed, as a CI
// runner kills a whole cgroup) is swept by the next Start under the same temp dir: its process
// killed, its mount undone, its loop device detached, it and its lock removed; so is a loop
// device left attached to an image, deleted, of a run directory already removed with its lock
// (by a sweep that did not know loop devices). A run whose lock is held, and one whose lock file
// is too new to have been locked yet, are left alone, their loop devices too.
func TestStaleRunIsSweptAtStart(t *testing.T) {
	base, err := os.MkdirTemp("/tmp", "testproc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	old := time.Now().Add(-2 * staleAfter)
	run := func(name string, age time.Time) string {
		dir := filepath.Join(base, runPrefix+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+lockSuffix, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir+lockSuffix, age, age); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dead, held, young := run("dead", old), run("held", old), run("young", time.Now())
	lock, err := os.Open(held + lockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	leftover := exec.Command("sleep", "600")
	leftover.Dir = dead
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leftover.Process.Kill(); leftover.Wait() })
	// loops are the loop devices attached here, on an image in the dead run, the held one and a
	// run already removed, and whether the sweep must detach each.
	type loop struct {
		dev, img string
		detach   bool
	}
	var loops []loop
	gone := filepath.Join(base, runPrefix+"gone")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{dead, held, gone} {
		img := filepath.Join(dir, "disk.img")
		dev, err := attachLoop(img)
		if err != nil {
			t.Logf("no loop device: %v; the loop device sweep is not exercised", err)
			break
		}
		loops = append(loops, loop{dev, img, dir != held})
		t.Cleanup(func() { detachIfOn(dev, img) })
	}
	if err := os.RemoveAll(gone); err != nil { // its loop device's image now "(deleted)"
		t.Fatal(err)
	}
	var mount string
	if os.Geteuid() == 0 {
		src, dst := filepath.Join(dead, "src"), filepath.Join(dead, "dst")
		os.Mkdir(src, 0o700)
		os.Mkdir(dst, 0o700)
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err == nil {
			mount = dst
			t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
		}
	}

	sweepStale(base)

	if err := leftover.Wait(); err == nil || leftover.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the dead run's process was not killed: %v", err)
	}
	if mount != "" {
		if mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mount)); err != nil || len(mounts) > 0 {
			t.Errorf("%s: still mounted after the sweep (%v)", mount, err)
		}
	}
	for _, l := range loops {
		backing, attached := loopBacking(l.dev)
		if attached = attached && backing == l.img; attached == l.detach {
			t.Errorf("loop device /dev/%s on %s: attached after the sweep = %v, want %v", l.dev, l.img, attached, !l.detach)
		}
	}
	for _, p := range []string{dead, dead + lockSuffix} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there after the sweep (%v)", p, err)
		}
	}
	for _, p := range []string{held, held + lockSuffix, young, young + lockSuffix} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a live or new run's %s was swept: %v", p, err)
		}
	}
}

// A flock closed here lives on in a copy of its descriptor that another process holds, as a
// child being started does between its fork and its exec: LOCK_NB refuses it meanwhile, and
// LockExclusive takes it once the copy is gone.
func TestLockExclusiveWaitsForACopyOfTheLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	held, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(held.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	copyHolder := exec.Command("sh", "-c", "read x") // holds the copy until its stdin ends
	copyHolder.ExtraFiles = []*os.File{held}
	stdin, err := copyHolder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := copyHolder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = copyHolder.Process.Kill(); _ = copyHolder.Wait() })
	held.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		t.Fatal("LOCK_NB took the lock a copy of the closed descriptor holds: the case LockExclusive waits for is not made")
	}
	stdin.Close() // the copy ends
	LockExclusive(t, f)
}
