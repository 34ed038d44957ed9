package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// TestSecondAgentIsRefusedAfterTheLocksDirWasRemovedUnderTheFirst: with an agent running, the
// state dir's locks directory was removed (a scenario docs/architecture.md, Locks, names: "The
// whole locks directory removed under a running process (an agent, the dashboard) is made
// again ... and the holders of locks taken before find them gone"), and a second `volctl agent`
// on the same state dir then started and ran beside the first: its LockAgent made a new
// locks/agent.lock and took it, while the first agent, which never looks at its lock again,
// held the flock on the removed file. The agent lock is there "so that one agent runs per
// state dir" (engine.LockAgent); two agents supervise and adopt the same plugins, and
// `plugin status` and the mount-namespace check read the lock's holder, which is no longer
// the agent that runs. Found by helper review73.
func TestSecondAgentIsRefusedAfterTheLocksDirWasRemovedUnderTheFirst(t *testing.T) {
	f := newFixture(t)
	stop := f.startAgent(testSettings)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("first agent: %v", err)
		}
	}()
	waitFor(t, "the first agent's pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(f.dir, "run", "agent.pid"))
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid())
	})
	if err := os.RemoveAll(filepath.Join(f.dir, "locks")); err != nil {
		t.Fatal(err)
	}

	second, err := New(Config{Engine: f.openEngine(), Settings: testSettings})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	err = second.Run(ctx)
	if !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("second agent on the state dir, started once its locks directory was removed under the first: Run returned %v after %s "+
			"(it ran beside the first agent until its context ended); want an engine.ErrConflict naming the agent that runs",
			err, time.Since(start).Round(time.Millisecond))
	}
}
