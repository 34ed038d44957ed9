package testproc

import (
	"bufio"
	"bytes"
	"encoding/json"
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
}

// A test binary killed outright (as -timeout ends one: no cleanup runs) leaves nothing: neither
// a plugin it started in a session of its own with the filtered environment the agent gives
// plugins, nor an ordinary child, nor a bind mount under its temp dir, nor the dir.
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
	if _, err := os.Stat(left.Dir); !os.IsNotExist(err) {
		t.Errorf("the test binary's temp dir %s is still there (%v)", left.Dir, err)
	}
	if want := "outlived its test binary: killed 2 processes"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the test binary's output does not say what was left (%q):\n%s", want, stderr.Bytes())
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
	}
	b, _ := json.Marshal(left)
	os.Stdout.Write(append(b, '\n'))
	time.Sleep(time.Hour)
}

// A run directory whose lock nobody holds (its test binary and watchdog both killed, as a CI
// runner kills a whole cgroup) is swept by the next Start under the same temp dir: its process
// killed, its mount undone, it and its lock removed. A run whose lock is held, and one whose lock
// file is too new to have been locked yet, are left alone.
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
