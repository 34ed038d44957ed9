package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/store"
)

// holdLockInAnotherProcess has flock(1), another process as another volctl would be, take the
// lock file locks/<name>.lock exclusively, and returns it once /proc/locks lists it as holding it.
func holdLockInAnotherProcess(t *testing.T, h *harness, name string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("needs flock(1) (util-linux) to hold a lock from another process")
	}
	path := filepath.Join(h.e.locks.dir, name+".lock")
	// Its own process group, which killGroup ends whole: sleep, flock's child, holds the lock too.
	cmd := exec.Command(bin, "--exclusive", path, "sleep", "120")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil {
			for _, hd := range store.FlockHolders(fi, "") {
				if hd.Pid == cmd.Process.Pid {
					return cmd
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("flock(1), pid %d, does not hold %s after 10s", cmd.Process.Pid, path)
		}
	}
}

// killGroup ends the process group holdLockInAnotherProcess started, stopped or not.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
}

// A volctl stopped by a signal (^Z, SIGSTOP) while it holds a volume's lock holds it until it is
// resumed or ended. A command waiting for that lock said "another volctl is working on it" and
// waited while its context lasted: in a script, silently, for ever (found by SIGSTOPping volctl
// processes under the chaos run). Now the wait names the holder (pid, command, stopped), and
// gives up, saying how to resume or end it, once it has been stopped for stoppedWait; a holder
// that runs is waited for, as before, and the command goes on once it lets go.
func TestLockHeldByAStoppedProcessIsNamedAndNotWaitedForEver(t *testing.T) {
	t.Parallel()
	h, holder, err, ended := claimBehindAStoppedHolder(t, "volume-v", 15*time.Second)
	pid := holder.Process.Pid
	if err == nil || ended != nil {
		t.Fatalf("claim behind a stopped holder of the volume's lock: %v; want it to give up before its context ends", err)
	}
	for _, want := range []string{`the lock on volume "v" is held by pid ` + fmt.Sprint(pid) + ": flock, stopped",
		fmt.Sprintf("kill -CONT %d", pid), fmt.Sprintf("kill %d", pid), "volctl reconcile"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("claim behind a stopped holder: %v; want it to say %q", err, want)
		}
	}
	// Admitted while the lock was held, the claim is left taken, and the error says so.
	if got := h.liveClaims("v"); len(got) != 1 || got[0].State != store.ClaimTaken || !strings.Contains(err.Error(), "the claim is left taken, not published") {
		t.Fatalf("the claim that gave up: %v; left %+v; want it left taken, saying so", err, got)
	}

	// Resumed, it is waited for (longer than stoppedWait), named, and the claim goes on once it
	// lets go.
	if err := holder.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var steps []string
	pctx := WithProgress(h.ctx, func(step string) { mu.Lock(); steps = append(steps, step); mu.Unlock() })
	done := make(chan error, 1)
	go func() { _, err := h.e.Claim(pctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("claim behind a running holder ended: %v; want it to wait", err)
	case <-time.After(4 * h.e.locks.stoppedWait):
	}
	killGroup(holder)
	if err := <-done; err != nil {
		t.Fatalf("claim once the holder is gone: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf(`waiting for the lock on volume "v" (held by pid %d: flock)`, pid)
	found := false
	for _, s := range steps {
		found = found || s == want
	}
	if !found {
		t.Fatalf("progress %q; want %q", steps, want)
	}
}

// The agent's pass, which gives up on a lock after PassLockWait, names who holds it.
func TestPassNamesTheHolderOfALockItGivesUpOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{PassLockWait: 200 * time.Millisecond})
	h.claimThenReboot("held", "a", "single-node-writer")
	holder := holdLockInAnotherProcess(t, h, "volume-held")
	rep, err := h.e.Reconcile(h.ctx)
	want := fmt.Sprintf(`the lock on volume "held": another volctl (pid %d: flock) has held it for more than 200ms`, holder.Process.Pid)
	if err == nil || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Message, want) {
		t.Fatalf("reconcile with the lock held by another process: %+v, %v; want a problem saying %q", rep.Problems, err, want)
	}
}

// claimBehindAStoppedHolder claims volume v of a new harness for alloc a while another process
// holds lock name and is stopped (SIGSTOP), the claim given up to within, and the wait for a
// stopped holder 500 ms. It returns the harness, the holder, the claim's error and the claim
// context's own (non-nil: it ran out first).
func claimBehindAStoppedHolder(t *testing.T, name string, within time.Duration) (*harness, *exec.Cmd, error, error) {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.e.locks.stoppedWait = 500 * time.Millisecond
	holder := holdLockInAnotherProcess(t, h, name)
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, within)
	defer cancel()
	_, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	return h, holder, err, ctx.Err()
}
