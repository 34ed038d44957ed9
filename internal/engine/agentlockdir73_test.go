package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgentLockIsStillNamedOnceTheLocksDirIsRemoved: an agent's lock taken, then the whole
// locks directory removed under it, the agent is still the lock's holder for everything that
// reads it: status's liveness (agentLockHolders: before, no agent.lock read as "no agent",
// and every record it runs shown gone) and a second LockAgent, refused (agent's
// TestSecondAgentIsRefusedAfterTheLocksDirWasRemovedUnderTheFirst). Once released, the lock
// is taken again.
func TestAgentLockIsStillNamedOnceTheLocksDirIsRemoved(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	release, _, err := h.e.LockAgent()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(h.dir, "locks")); err != nil {
		t.Fatal(err)
	}
	if pids, known := h.e.agentLockHolders(); !known || !slices.Contains(pids, os.Getpid()) {
		t.Errorf("agentLockHolders with locks/ removed = %v (known %v); want this process, which holds the agent lock", pids, known)
	}
	// (agentHolders, which names the holder, leaves this process out, as /proc/locks readers
	// of another process's lock do: the agent's own test runs the second agent alone.)
	if _, _, err := h.e.LockAgent(); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "another volctl agent is running on state dir "+h.dir) {
		t.Errorf("a second LockAgent with locks/ removed: %v; want a conflict naming the state dir", err)
	}
	release()
	again, _, err := h.e.LockAgent()
	if err != nil {
		t.Fatalf("LockAgent once the first was released: %v", err)
	}
	again()
}
