package engine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestPluginSocketInTheStateDirStartsWhileTheAgentRuns: with the agent lock held (round 73's
// first form, a flock on the state dir) (a running
// `volctl agent`), volctl's own plugin could no longer start with its socket in the state dir,
// the layout README.md's tour uses (`VOLCTL_STATE_DIR=/tmp/volctl-tour`, `volctl plugin serve
// hostpath --socket /tmp/volctl-tour/hp.sock`), nor could the agent remove a stale socket there
// before starting an exec plugin (hostpath.RemoveStaleSocket, runner.go): LockAgent now also
// takes an exclusive flock on the state dir itself, the very lock hostpath.Listen and
// RemoveStaleSocket take on a socket's directory for their check-remove-listen, which then
// waited its 5 s and failed naming "another process" (the agent). LockAgent's doc promises
// only that a second agent is refused, and hostpath.Listen that the directory lock is held for
// "milliseconds" by a plugin starting there. Found by helper review73 (own1).
func TestPluginSocketInTheStateDirStartsWhileTheAgentRuns(t *testing.T) {
	h := newHarness(t, nil)
	release, _, err := h.e.LockAgent() // this process is the agent
	if err != nil {
		t.Fatalf("agent lock: %v", err)
	}
	defer release()

	sock := filepath.Join(h.dir, "hp.sock")
	start := time.Now()
	l, err := hostpath.Listen(sock)
	if err != nil {
		t.Errorf("hostpath plugin listening at %s, its socket in the state dir, while the agent runs: refused after %s: %v; "+
			"want it served, as before the agent lock was a flock on the state dir", sock, time.Since(start).Round(time.Millisecond), err)
	} else {
		l.Close()
	}

	start = time.Now()
	if err := hostpath.RemoveStaleSocket(filepath.Join(h.dir, "exec.sock")); err != nil {
		t.Errorf("the agent removing a stale socket in the state dir before starting a plugin there: refused after %s: %v; want done",
			time.Since(start).Round(time.Millisecond), err)
	}
}
