package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// An agent killed by SIGKILL leaves run/agent.pid naming its pid, which the kernel may give to
// any process since. The agent lock is a flock, dropped with the process, so the next agent
// starts; but between its lock and its own pid file's write, and whenever its pid file could not
// be written, a third one refused read the killed agent's pid from the file and named it as the
// agent running: a user told to stop that pid ends an unrelated process (here a sleep given the
// pid), the agent holding the lock running on. The refusal names the process that holds the
// lock, as /proc/locks says, never a pid the file says that holds nothing.
func TestSecondAgentRefusalNamesTheLockHolderNotAStalePidFile(t *testing.T) {
	f := newFixture(t)
	// The process the killed agent's pid went to since.
	reused := exec.Command("sleep", "60")
	if err := reused.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reused.Process.Kill(); _ = reused.Wait() })
	if err := os.MkdirAll(filepath.Join(f.dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "run", "agent.pid"), []byte(strconv.Itoa(reused.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The agent that started since, holding the lock, its pid file not written (yet).
	lock := filepath.Join(f.dir, "locks", "agent.lock")
	ready := filepath.Join(f.dir, "holder-ready")
	holder := exec.Command("flock", "--exclusive", "--nonblock", lock, "sh", "-c", `: > "$1"; exec sleep 60`, "sh", ready)
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock(1) and its sleep, ended together
	if err := holder.Start(); err != nil {
		t.Skipf("flock(1) cannot be run to hold the agent lock from another process: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); _ = holder.Wait() })
	waitFor(t, "flock(1) to hold the agent lock", func() bool { _, err := os.Stat(ready); return err == nil })

	err := f.runSecondAgent()
	if !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("second agent: %v, want a conflict", err)
	}
	if stale := fmt.Sprintf("pid %d", reused.Process.Pid); strings.Contains(err.Error(), stale) {
		t.Errorf("second agent's refusal names %s, a process that holds no agent lock (the stale run/agent.pid's): %v", stale, err)
	}
	if want := fmt.Sprintf("(pid %d: flock", holder.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("second agent's refusal %q does not name the process holding the lock, %q", err, want)
	}
	// The refused agent leaves the pid file as it was.
	if b, _ := os.ReadFile(filepath.Join(f.dir, "run", "agent.pid")); strings.TrimSpace(string(b)) != strconv.Itoa(reused.Process.Pid) {
		t.Errorf("run/agent.pid holds %q after the refusal", b)
	}
}
