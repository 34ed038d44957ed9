package agent

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestStartupRestoreWaitsForAPluginRedeclaredTwiceBeforeItSettled: plugin "sys" (no exec
// block: its own supervisor runs it) answers not ready at the agent's start, its health timeout
// an hour off, so the runner the first sync starts for it (the one housekeeping's start-up
// restore waits on) does not settle. Its registration then changes twice, each picked up by a
// sync before the plugin is ready (an operator re-registering it, or a declaration that keeps
// changing): the first sync replaces the runner with a successor, handed the settling of the
// first (Agent.sync's handed map); the second replaces that successor. The goroutine that
// settles the first runner waits on `<-r.settled` or `<-rctx.Done()`, rctx being the
// successor's own context, which the second replacement cancels: the first runner is settled
// then, and the start-up reconcile runs and the agent says READY=1 while the plugin answers
// not ready and its health timeout has not passed — the very thing
// TestLateFirstRegistrationOfARedeclaredPluginDoesNotSettleTheStartupRestore fixed for one
// replacement. Correct: a successor replaced before it settled hands the settling on to its
// own successor (it is handedOn, so its settled channel closes when that one settles);
// the waiting goroutine should wait for the successor's settled or the agent's stop (the
// agent's context), not the successor's own context.
// Found by helper review80 (own80e), in this round's own change.
func TestStartupRestoreWaitsForAPluginRedeclaredTwiceBeforeItSettled(t *testing.T) {
	f := newFixture(t)
	cfg := csitest.DefaultMemConfig()
	cfg.Ready = new(bool) // still starting: ready=false, for ever
	socket := filepath.Join(f.dir, "sys.sock")
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	sp := spec.Plugin{ID: "sys", Type: spec.PluginMonolith, Socket: socket}
	f.register(sp)

	s := testSettings
	s.HealthTimeout = time.Hour
	a, stop := f.startAgentWith(func(c *Config) { c.Settings = s })
	defer func() { _ = stop() }()
	waitFor(t, "the agent's runner for plugin sys probing it not ready", func() bool {
		return strings.Contains(f.logs.String(), "plugin not ready")
	})
	if a.Ready() {
		t.Fatalf("premise: the agent is ready while plugin sys answers not ready; log:\n%s", f.logs)
	}
	replaced := func() int { return strings.Count(f.logs.String(), "plugin declaration changed; supervising it anew") }

	// Its registration changes: the runner the start-up restore waits on is replaced.
	sp.Timeout = 7 * time.Second
	f.register(sp)
	waitFor(t, "the runner of plugin sys replaced once", func() bool { return replaced() >= 1 })
	time.Sleep(time.Second)
	if a.Ready() {
		t.Fatalf("premise: the agent is ready after one replacement (the case fixed before); log:\n%s", f.logs)
	}

	// And again, before the plugin is ready: the successor is replaced in turn.
	sp.Timeout = 8 * time.Second
	f.register(sp)
	waitFor(t, "the runner of plugin sys replaced twice", func() bool { return replaced() >= 2 })
	time.Sleep(2 * time.Second) // time for housekeeping to run the start-up reconcile if it thinks it may
	if h := f.plugin("sys").Health(); h != engine.PluginNotReady {
		t.Fatalf("premise: plugin sys is %v, not still not ready", h)
	}
	if a.Ready() {
		t.Fatalf("the agent reported ready (start-up restore run, READY=1) while plugin %q answers not ready and its health timeout (%s) has not passed: "+
			"its second replacement cancelled the first successor's context, which settled the runner the start-up restore waits on; log:\n%s", "sys", s.HealthTimeout, f.logs)
	}
}
