package procfstest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/procfs"
)

// kept holds what a child's prepare returned that must stay open while it runs (a lock's file:
// collected, its finalizer would close it and drop the lock).
var kept []any

// Child, called from a test package's init (which runs on the first thread), makes the test
// binary the process Start starts when env is set: prepare, given env's value, readies it and
// returns the socket to serve on and anything to keep open; then ServeThenEndFirstThread. The
// process ends when its stdin closes (the test's cleanup). It returns at once when env is unset.
func Child(env string, prepare func(arg string) (socket string, keep any)) {
	arg := os.Getenv(env)
	if arg == "" {
		return
	}
	socket, keep := prepare(arg)
	kept = append(kept, keep)
	crash.Go(func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	})
	ServeThenEndFirstThread(socket)
}

// Start starts the test binary as Child(env, ...) with env set to arg, with the process
// attributes sys (nil: none), and returns its pid once it has said ready and /proc shows its
// first thread a zombie. The test's cleanup resumes it if stopped, closes its stdin and waits.
func Start(t testing.TB, env, arg string, sys *syscall.SysProcAttr) int {
	t.Helper()
	pid := start(t, env, arg, sys, func(cmd *exec.Cmd, stdin io.Closer) {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		stdin.Close()
		_ = cmd.Wait()
	})
	stat := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, _ := procfs.StatFields(stat); len(f) > 0 && f[0] == "Z" {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d (%s=%s): its first thread did not exit", pid, env, arg)
		}
	}
}

// StartReady starts the test binary with env set to arg, for a package's own init to make it
// whatever process the test needs (one that takes a lock and then blocks), and returns its
// pid once it has printed "ready" on its own line. The test's cleanup kills it and waits.
func StartReady(t testing.TB, env, arg string) int {
	t.Helper()
	return start(t, env, arg, nil, func(cmd *exec.Cmd, _ io.Closer) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// start starts the test binary (no test run) with env set to arg and the process attributes
// sys, registers stop as the test's cleanup, and returns the pid once the process has printed
// "ready".
func start(t testing.TB, env, arg string, sys *syscall.SysProcAttr, stop func(cmd *exec.Cmd, stdin io.Closer)) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+arg)
	cmd.SysProcAttr = sys
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(cmd, stdin) })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the test binary as %s=%s said %q (%v), want ready", env, arg, line, err)
	}
	return cmd.Process.Pid
}
