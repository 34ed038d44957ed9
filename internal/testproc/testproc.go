// Package testproc keeps what a test binary starts from outliving it. A test binary that hits
// -timeout, panics in a goroutine or is killed exits without running its cleanups: the plugins,
// agents and volctl commands its tests started run on, and their bind mounts stay, under /tmp.
//
// Start, called first in a package's TestMain, gives the test binary a run directory of its own
// (TMPDIR, so every os.MkdirTemp("", ...) of its tests, hostpathtest's mount dirs and scripts'
// work dirs included, lands there, and every process they start inherits it; t.TempDir stays in
// GOTMPDIR, where it was) and a watchdog: a second copy of the test binary, in a process
// group of its own, that waits for the test binary to end (the end of a pipe only the test
// binary holds) and then sweeps the run directory: it kills every process still marked as the
// run's (its TMPDIR or working directory inside it, or the run's owner variable: plugins an
// agent starts keep TMPDIR but not the rest of the environment), unmounts whatever is mounted
// inside it, deepest first, detaches every loop device whose backing file is inside it (a disk
// test's image: removing the file alone leaves the device attached to it, "(deleted)", until
// reboot), and removes it. A run ended normally leaves nothing to find.
//
// A watchdog killed too (the whole cgroup killed by a CI runner) leaves its run directory behind:
// the next Start under the same temp dir sweeps every run directory whose lock nobody holds, and
// detaches the loop devices left on a run directory already removed.
package testproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

const (
	// ownerEnv is the run directory, in the test binary's environment and so in its children's.
	// A test binary started with it set (a test running its own binary) is part of that run.
	ownerEnv = "VOLCTL_TEST_RUN_DIR"
	// watchEnv, in the watchdog's environment only, makes Start run the watchdog.
	watchEnv = "VOLCTL_TEST_WATCHDOG"
	// runPrefix starts a run directory's name; its lock file is the same name with lockSuffix.
	runPrefix  = "vrun-"
	lockSuffix = ".lock"
	// staleAfter is how old an unlocked lock file must be before Start sweeps its run: younger,
	// it may be a run that has made it and not locked it yet.
	staleAfter = time.Minute
)

// Start makes this test binary's run directory and starts its watchdog; in the watchdog it runs
// the watchdog and exits. It does nothing in a process already part of a run (a test binary a
// test started, this binary run as volctl by testscript). Call it first in TestMain.
func Start() {
	if path := os.Getenv(noPtraceEnv); path != "" && len(os.Args) > 0 && os.Args[0] == "volctl-test-no-ptrace" {
		execWithoutPtrace(path)
	}
	if dir := os.Getenv(watchEnv); dir != "" {
		os.Exit(watch(dir))
	}
	if os.Getenv(ownerEnv) != "" || isRunDir(os.Getenv("TMPDIR")) {
		return
	}
	base := os.TempDir()
	if len(base) > 32 { // unix socket paths are limited to 108 bytes: keep the prefix short
		base = "/tmp"
	}
	sweepStale(base)
	dir, lock, err := makeRun(base)
	if err != nil {
		// Tests still run, as before this package: only their leftovers are not looked after.
		fmt.Fprintf(os.Stderr, "testproc: no run directory under %s (%v): a test binary that dies leaves its processes and mounts behind\n", base, err)
		return
	}
	if err := startWatchdog(dir, lock); err != nil {
		fmt.Fprintf(os.Stderr, "testproc: %v: a test binary that dies leaves its processes and mounts behind\n", err)
	}
	if os.Getenv("GOTMPDIR") == "" {
		// t.TempDir (which takes GOTMPDIR first) stays where it was: its paths hold the test's
		// name, up to 64 bytes, and tests put sockets there, which must stay under 108 bytes.
		os.Setenv("GOTMPDIR", os.TempDir())
	}
	os.Setenv("TMPDIR", dir)
	os.Setenv(ownerEnv, dir)
}

// isRunDir reports whether dir is a run directory or inside one.
func isRunDir(dir string) bool {
	for d := filepath.Clean(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		if strings.HasPrefix(filepath.Base(d), runPrefix) {
			return true
		}
	}
	return false
}

// makeRun creates a run directory under base and its lock file, locked first: a run directory
// without a held lock is a dead run's.
func makeRun(base string) (string, *os.File, error) {
	lock, err := os.CreateTemp(base, runPrefix+"*"+lockSuffix)
	if err != nil {
		return "", nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		os.Remove(lock.Name())
		return "", nil, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	dir := strings.TrimSuffix(lock.Name(), lockSuffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		lock.Close()
		os.Remove(lock.Name())
		return "", nil, err
	}
	return dir, lock, nil
}

// startWatchdog starts this binary as dir's watchdog. It inherits the lock (the same open file:
// the lock is held until both processes are gone) and the read end of a pipe whose write end
// only this process holds (close-on-exec keeps it from every other child).
func startWatchdog(dir string, lock *os.File) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("watchdog pipe: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the test binary: %w", err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	// GORACE: under -race a process sleeps 1 s before it exits, and `go test` waits for the
	// watchdog, which holds the test binary's stderr.
	cmd.Env = append(os.Environ(), watchEnv+"="+dir, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr // what it swept shows in the test's output
	cmd.ExtraFiles = []*os.File{r, lock}
	// A group of its own: the terminal's ^C ends the tests, not the watchdog that cleans after them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	lock.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	// Not waited for: it outlives this process by design. w stays open (never closed, kept
	// reachable) until this process ends, whichever way.
	keep = append(keep, w)
	cmd.Process.Release()
	return nil
}

var keep []*os.File

// watch is the watchdog: it waits for the test binary to end, then sweeps its run directory.
func watch(dir string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	end := os.NewFile(3, "test binary")
	io.Copy(io.Discard, end) // EOF: the test binary is gone
	if err := sweep(dir); err != nil {
		fmt.Fprintf(os.Stderr, "testproc: cleaning up after the test binary: %v\n", err)
		return 1
	}
	return 0
}

// sweepStale sweeps the run directories under base whose lock nobody holds.
func sweepStale(base string) {
	sweepOrphanLoops(base)
	locks, _ := filepath.Glob(filepath.Join(base, runPrefix+"*"+lockSuffix))
	for _, name := range locks {
		fi, err := os.Stat(name)
		if err != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if err := sweep(strings.TrimSuffix(name, lockSuffix)); err != nil {
				fmt.Fprintf(os.Stderr, "testproc: cleaning up after an earlier test run: %v\n", err)
			}
		}
		f.Close()
	}
}

// sweepOrphanLoops detaches the loop devices whose backing file was in a run directory under
// base that is gone with its lock file (removed by a sweep that left its loop devices: a run
// directory's lock file goes last, so a run with none has ended and nothing of it can be live).
func sweepOrphanLoops(base string) {
	prefix := filepath.Join(base, runPrefix)
	detached, err := detachLoops(func(backing string) bool {
		rest, ok := strings.CutPrefix(backing, prefix)
		if !ok {
			return false
		}
		run, _, _ := strings.Cut(rest, "/")
		_, err := os.Lstat(prefix + run + lockSuffix)
		return os.IsNotExist(err)
	})
	if detached > 0 {
		fmt.Fprintf(os.Stderr, "testproc: detached %d loop devices left by earlier test runs under %s\n", detached, base)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testproc: cleaning up after an earlier test run: %v\n", err)
	}
}

// sweep kills the processes of the run in dir, unmounts what is mounted inside it, detaches the
// loop devices whose backing file is inside it, and removes it and its lock file; it says what
// it found on stderr. dir is left in place while anything is still mounted inside it, so that
// removing it never reaches into a mounted filesystem.
func sweep(dir string) error {
	killed := killRun(dir)
	unmounted, err := unmountUnder(dir)
	// After the unmounts: a device still mounted is detached only once the mount lets go of it.
	detached, loopErr := detachLoops(func(backing string) bool { return inside(backing, dir) })
	if killed+unmounted+detached > 0 {
		fmt.Fprintf(os.Stderr, "testproc: %s outlived its test binary: killed %d processes, unmounted %d mounts, detached %d loop devices\n", dir, killed, unmounted, detached)
	}
	if err != nil {
		return fmt.Errorf("%s: %w; unmount it, then remove the directory", dir, err)
	}
	if loopErr != nil {
		return fmt.Errorf("%s: %w", dir, loopErr)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	os.Remove(dir + lockSuffix)
	return nil
}

// killRun SIGKILLs the run's processes, again until none is left (one may be forking), and
// returns how many it killed. A process is the run's when its environment holds ownerEnv=dir or
// a TMPDIR inside dir, or its working directory is inside dir.
func killRun(dir string) int {
	killed := map[int]bool{}
	for range 100 {
		found := false
		for _, pid := range runProcesses(dir) {
			found = true
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		if !found {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return len(killed)
}

func runProcesses(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if ownedBy(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func ownedBy(pid int, dir string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	if stat, err := os.ReadFile(proc + "/stat"); err != nil || zombie(stat) {
		return false // gone, or dead and waiting to be reaped: a kill does nothing more
	}
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil && inside(cwd, dir) {
		return true
	}
	env, err := os.ReadFile(proc + "/environ")
	if err != nil {
		return false
	}
	for kv := range strings.SplitSeq(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, ownerEnv+"="); ok && v == dir {
			return true
		}
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && inside(v, dir) {
			return true
		}
	}
	return false
}

// zombie reports whether /proc/PID/stat says the process has exited (state Z or X).
func zombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func inside(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// unmountUnder detaches everything mounted inside dir, deepest first, and returns how many.
func unmountUnder(dir string) (int, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return 0, fmt.Errorf("reading the mount table: %w", err)
	}
	points := make([]string, 0, len(mounts))
	for _, m := range mounts {
		points = append(points, m.Mountpoint)
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	n := 0
	for _, p := range points {
		switch err := unix.Unmount(p, unix.MNT_DETACH); {
		case err == nil:
			n++
		case !errors.Is(err, unix.EINVAL): // EINVAL: already gone with its parent
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return n, errors.Join(errs...)
}

// loopDetachWait bounds how long detachLoops waits for a device still open (by a file system
// being lazily unmounted) to be let go of and detached.
const loopDetachWait = 10 * time.Second

// detachLoops detaches every loop device whose backing file (as the kernel names it, " (deleted)"
// when it is removed) matches, and returns how many. A device still open is detached by the
// kernel on its last close (LOOP_CLR_FD sets autoclear); detachLoops waits for that, bounded.
func detachLoops(match func(backing string) bool) (int, error) {
	var errs []error
	pending := map[string]bool{}
	for _, dev := range attachedLoops() {
		backing, ok := loopBacking(dev)
		if !ok || !match(backing) {
			continue
		}
		if err := detachLoop(dev); err != nil {
			errs = append(errs, err)
			continue
		}
		pending[dev] = true
	}
	n := len(pending)
	for deadline := time.Now().Add(loopDetachWait); ; time.Sleep(20 * time.Millisecond) {
		for dev := range pending {
			if _, ok := loopBacking(dev); !ok {
				delete(pending, dev)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for dev := range pending {
		n--
		errs = append(errs, fmt.Errorf("loop device /dev/%s: still attached %v after its detach (something holds it open: see `losetup -l`, then `losetup -d /dev/%s`)", dev, loopDetachWait, dev))
	}
	return n, errors.Join(errs...)
}

// attachedLoops returns the names (loop0, ...) of the loop devices bound to a backing file.
func attachedLoops() []string {
	devs, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, filepath.Base(filepath.Dir(filepath.Dir(d))))
	}
	return names
}

// loopBacking returns the path of loop device dev's backing file, and false when dev is not
// attached.
func loopBacking(dev string) (string, bool) {
	b, err := os.ReadFile("/sys/block/" + dev + "/loop/backing_file")
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), " (deleted)"), true
}

func detachLoop(dev string) error {
	f, err := os.OpenFile("/dev/"+dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("loop device %s: %w; detach it with `losetup -d /dev/%s`", dev, err, dev)
	}
	defer f.Close()
	// ENXIO: detached meanwhile.
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detaching loop device /dev/%s: %w; detach it with `losetup -d /dev/%s`", dev, err, dev)
	}
	return nil
}
