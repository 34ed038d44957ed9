package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/testproc"
)

// TestRootsVolctlWritesNoCoreDump: a volctl running as root holds the state's secrets in its
// memory (and its environment: a Nomad token). Killed so that the kernel dumps its core (a
// SIGQUIT under GOTRACEBACK=crash, which an operator sets to debug; a fatal runtime error),
// it wrote them all to a core file in its working directory, a copy outside the state that no
// secure_delete wipes. Now root's volctl lowers its core size limit to 1
// (cli.KeepSecretsOutOfCoreDumps): started with cores allowed (ulimit -c unlimited), it still
// dies, with its stack trace on stderr, and writes no core.
func TestRootsVolctlWritesNoCoreDump(t *testing.T) {
	t.Parallel()
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil || strings.HasPrefix(string(pattern), "|") || strings.Contains(string(pattern), "/") {
		t.Skipf("core_pattern %q (%v): the kernel does not write cores to the working directory, where this test looks", pattern, err)
	}
	crashServe(t, nil, nil)
}

// TestRootsVolctlPipesNoCoreDump: under a core_pattern that pipes cores to a handler
// (systemd-coredump, apport), the kernel ignores a core size limit of 0 and starts the handler
// with the whole core; 1 it refuses ("RLIMIT_CORE is set to 1, aborting core"). A process with
// cores allowed is piped to the handler (the test shows something); root's volctl is not. It
// sets kernel.core_pattern, which is the whole host's, for a moment: it runs only when asked.
func TestRootsVolctlPipesNoCoreDump(t *testing.T) {
	if os.Getenv("VOLCTL_TEST_CORE_PATTERN") == "" {
		t.Skip("sets kernel.core_pattern, the whole host's: run with VOLCTL_TEST_CORE_PATTERN=1, alone")
	}
	dir := t.TempDir()
	old, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Fatal(err)
	}
	pattern := "|/bin/sh -c cat>" + filepath.Join(dir, "piped.%p")
	if err := os.WriteFile("/proc/sys/kernel/core_pattern", []byte(pattern), 0); err != nil {
		t.Skipf("setting core_pattern: %v", err)
	}
	t.Cleanup(func() { os.WriteFile("/proc/sys/kernel/core_pattern", old, 0) })
	// Control: a process with cores allowed is piped to the handler.
	dumpAControlProcess(t)
	if !waitForGlob(filepath.Join(dir, "piped.*")) {
		t.Fatalf("a process with cores allowed, under core_pattern %q, piped no core: the test shows nothing", pattern)
	}
	for _, f := range globbed(filepath.Join(dir, "piped.*")) {
		os.Remove(f)
	}
	crashServe(t, nil, func(int) {
		if waitForGlob(filepath.Join(dir, "piped.*")) {
			t.Errorf("root's volctl, killed under GOTRACEBACK=crash, piped its core to the handler of core_pattern %q: %v", pattern, globbed(filepath.Join(dir, "piped.*")))
		}
	})
}

// dumpAControlProcess starts a process with cores allowed (soft limit unlimited) and kills it
// with SIGQUIT, so that the kernel dumps its core; it returns its pid.
func dumpAControlProcess(t *testing.T) int {
	t.Helper()
	ctl := exec.Command("/bin/sh", "-c", `ulimit -S -c unlimited && exec sleep 60`)
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	ctl.Process.Signal(syscall.SIGQUIT)
	ctl.Wait()
	return ctl.Process.Pid
}

func globbed(pattern string) []string { m, _ := filepath.Glob(pattern); return m }

// waitForGlob waits a moment for a file matching pattern, which a core handler writes after
// the process it dumps has died.
func waitForGlob(pattern string) bool {
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(globbed(pattern)) > 0 {
			return true
		}
	}
	return false
}

// crashServe starts root's `volctl plugin serve hostpath` with cores allowed (soft limit
// unlimited) and a secret in its environment, kills it with SIGQUIT under GOTRACEBACK=crash,
// and fails the test for a core file it left in its working directory; before, if given, runs
// once it serves, before the kill; after, if given, looks for a core elsewhere, given its pid.
func crashServe(t *testing.T, before func(), after func(pid int)) {
	if os.Geteuid() != 0 {
		t.Skip("volctl keeps root's cores from being written (KeepSecretsOutOfCoreDumps), not another user's: run as root")
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Max != unix.RLIM_INFINITY {
		t.Skipf("RLIMIT_CORE's hard limit is %d (%v), not unlimited: volctl cannot be started with cores allowed here", lim.Max, err)
	}
	const secret = "Zq9-volctl-distinctive-secret-core-dump"
	bin := buildVolctl(t)
	dir := hostpathtest.ShortDir(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "p.sock")
	// Started with cores allowed, as an operator's `ulimit -c unlimited` starts it.
	cmd := exec.Command("/bin/sh", "-c", `ulimit -S -c unlimited && exec "$0" "$@"`,
		bin, "plugin", "serve", "hostpath", "--socket", socket, "--root", filepath.Join(dir, "root"), "--node-id", "n1")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOTRACEBACK=crash", "VOLCTL_STATE_DIR="+filepath.Join(dir, "state"), "VOLCTL_TEST_TOKEN="+secret)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForPath(t, socket)
	if before != nil {
		before()
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("volctl under GOTRACEBACK=crash, sent SIGQUIT: %v, want it killed by SIGABRT: the test shows nothing\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "goroutine ") {
		t.Errorf("volctl killed under GOTRACEBACK=crash printed no stack trace:\n%s", out.String())
	}
	cores, _ := filepath.Glob(filepath.Join(work, "core*"))
	for _, core := range cores {
		b, err := os.ReadFile(core)
		if err != nil {
			t.Fatal(err)
		}
		held := ""
		if bytes.Contains(b, []byte(secret)) {
			held = ", and it holds the secret of the process's environment"
		}
		t.Errorf("root's volctl, killed under GOTRACEBACK=crash, left the core file %s (%d bytes)%s", core, len(b), held)
		os.Remove(core)
	}
	if ee.Sys().(syscall.WaitStatus).CoreDump() && len(cores) == 0 && after == nil {
		t.Errorf("root's volctl, killed under GOTRACEBACK=crash, dumped its core (not found in %s)", work)
	}
	if after != nil {
		after(cmd.Process.Pid)
	}
}

// TestRootsVolctlSendsNoCoreToASocket: a core_pattern naming a socket ("@/path", Linux 6.16,
// where systemd-coredump may listen) has the kernel connect there and send the whole core,
// whatever RLIMIT_CORE says (0 and 1 alike); only a process that is not dumpable sends none.
// core_pattern is the host's, and may become a socket while the agent runs for weeks (a systemd
// upgrade): volctl, started under a file pattern, then killed under GOTRACEBACK=crash once the
// pattern is a socket, sent its memory, secrets and all, to whoever listened. Now it checks
// again every second (cli.KeepSecretsOutOfCoreDumps) and sends none. A process with cores
// allowed sends one (the test shows something). It sets kernel.core_pattern, the whole host's,
// for a few seconds: it runs only when asked.
func TestRootsVolctlSendsNoCoreToASocket(t *testing.T) {
	if os.Getenv("VOLCTL_TEST_CORE_PATTERN") == "" {
		t.Skip("sets kernel.core_pattern, the whole host's: run with VOLCTL_TEST_CORE_PATTERN=1, alone")
	}
	old, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile("/proc/sys/kernel/core_pattern", old, 0) })
	sock := filepath.Join(hostpathtest.ShortDir(t), "core.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// Each core the kernel sends, by the pid of the process it dumps (the connection's peer).
	cores := make(chan [2]int, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				pid := 0
				if raw, err := c.(*net.UnixConn).SyscallConn(); err == nil {
					raw.Control(func(fd uintptr) {
						if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
							pid = int(cred.Pid)
						}
					})
				}
				n, _ := io.Copy(io.Discard, c)
				cores <- [2]int{pid, int(n)}
			}()
		}
	}()
	setPattern := func(p string) {
		t.Helper()
		if err := os.WriteFile("/proc/sys/kernel/core_pattern", []byte(p), 0); err != nil {
			t.Skipf("setting core_pattern %q (a socket takes Linux 6.16): %v", p, err)
		}
	}
	// coreOf waits a moment for the core of pid, and says its size, 0 for none.
	coreOf := func(pid int) int {
		for deadline := time.After(3 * time.Second); ; {
			select {
			case c := <-cores:
				if c[0] == pid {
					return c[1]
				}
			case <-deadline:
				return 0
			}
		}
	}
	setPattern("@" + sock)
	if coreOf(dumpAControlProcess(t)) == 0 {
		t.Fatalf("a process with cores allowed, under core_pattern %q, sent no core: the test shows nothing", "@"+sock)
	}
	setPattern("core")
	crashServe(t, func() {
		setPattern("@" + sock)
		time.Sleep(2 * time.Second) // past cli's coreWatchInterval, 1 s
	}, func(pid int) {
		if n := coreOf(pid); n > 0 {
			t.Errorf("root's volctl, killed under GOTRACEBACK=crash once core_pattern had become the socket %s, sent it its core (%d bytes)", sock, n)
		}
	})
}

// TestRootsVolctlIsReadableWithoutPtrace: other volctl processes read a volctl's /proc/PID/ns/mnt
// (the mount-namespace check, against the agent), exe and fd (a plugin's listener, `plugin
// serve`'s), and a lock holder's. Root's volctl made itself not dumpable to keep its core
// unwritten, and those files of a non-dumpable process are root's only with CAP_SYS_PTRACE,
// which every process in a Docker container with the default set lacks: each check read
// nothing. Now it stays dumpable: a process without the capability, as it is, reads them.
func TestRootsVolctlIsReadableWithoutPtrace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("root's volctl is the one that lowered its dumpability: run as root")
	}
	bin := buildVolctl(t)
	dir := hostpathtest.ShortDir(t)
	socket := filepath.Join(dir, "p.sock")
	serve := exec.Command(bin, "plugin", "serve", "hostpath", "--socket", socket, "--root", filepath.Join(dir, "root"), "--node-id", "n1")
	serve.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+filepath.Join(dir, "state"))
	testproc.WithoutPtrace(serve)
	var sout bytes.Buffer
	serve.Stdout, serve.Stderr = &sout, &sout
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	waitForPath(t, socket)
	pid := strconv.Itoa(serve.Process.Pid)
	read := exec.Command("/bin/sh", "-c", `readlink /proc/$0/ns/mnt && readlink /proc/$0/exe && ls /proc/$0/fd >/dev/null && echo read`, pid)
	testproc.WithoutPtrace(read)
	out, err := read.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "read") {
		t.Errorf("a process without CAP_SYS_PTRACE reading root's volctl's (pid %s, started without it too) /proc ns/mnt, exe and fd: %v\n%s", pid, err, out)
	}
}
