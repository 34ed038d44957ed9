package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestRootsVolctlWritesNoCoreDump: a volctl running as root holds the state's secrets in its
// memory (and its environment: a Nomad token). Killed so that the kernel dumps its core (a
// SIGQUIT under GOTRACEBACK=crash, which an operator sets to debug; a fatal runtime error),
// it wrote them all to a core file in its working directory, a copy outside the state that no
// secure_delete wipes. Now root's volctl is not dumpable (cli.KeepSecretsOutOfCoreDumps): it
// still dies, with its stack trace on stderr, and writes no core.
func TestRootsVolctlWritesNoCoreDump(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("volctl keeps root's cores from being written (KeepSecretsOutOfCoreDumps), not another user's: run as root")
	}
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil || strings.HasPrefix(string(pattern), "|") || strings.Contains(string(pattern), "/") {
		t.Skipf("core_pattern %q (%v): the kernel does not write cores to the working directory, where this test looks", pattern, err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Max == 0 {
		t.Skipf("RLIMIT_CORE's hard limit is 0 (%v): no process may dump a core here", err)
	}
	const secret = "Zq9-volctl-distinctive-secret-core-dump"
	bin := buildVolctl(t)
	dir := hostpathtest.ShortDir(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "p.sock")
	cmd := exec.Command(bin, "plugin", "serve", "hostpath", "--socket", socket, "--root", filepath.Join(dir, "root"), "--node-id", "n1")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOTRACEBACK=crash", "VOLCTL_STATE_DIR="+filepath.Join(dir, "state"), "VOLCTL_TEST_TOKEN="+secret)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForPath(t, socket)
	// The core limit raised for this process alone: the test's own stays as it was.
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_CORE, &unix.Rlimit{Cur: lim.Max, Max: lim.Max}, nil); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skipf("raising the plugin's core limit: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("volctl under GOTRACEBACK=crash, sent SIGQUIT: %v, want it killed by SIGABRT: the test shows nothing\n%s", err, out.String())
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
	if ee.Sys().(syscall.WaitStatus).CoreDump() && len(cores) == 0 {
		t.Errorf("root's volctl, killed under GOTRACEBACK=crash, dumped its core (not found in %s)", work)
	}
}
