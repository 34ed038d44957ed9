package agent

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// docs/agent.md: the start-up restore "runs once every plugin is healthy (its Probe answering
// ready: one answering not ready is still starting) or has used up its health timeout", and
// architecture.md: "Once every runner has settled (healthy and ready, or its health timeout
// used up ...)". A plugin registered without an exec block (started by systemd or a container
// runtime beside the agent at boot, the setup the agent calls honest) that answers Probe with
// ready=false is still starting; the runner settles it at its first answer all the same
// (runner.loop: `ready || !r.supervised()`), so the start-up reconcile sends its restores to a
// plugin still starting and the agent tells the service manager READY=1 ("plugins probed and
// the start-up reconcile done") at once, units ordered after it starting on unrestored mounts.
// Correct: such a plugin holds the start-up restore back as an exec plugin answering not ready
// does, up to the health timeout. Found by helper review74.
func TestNotReadyPluginWithoutAnExecBlockDoesNotSettleTheStartupRestore(t *testing.T) {
	f := newFixture(t)
	cfg := csitest.DefaultMemConfig()
	cfg.Ready = new(bool) // ready=false, for ever
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	f.register(spec.Plugin{ID: "sys", Type: spec.PluginMonolith, Socket: socket})
	s := testSettings
	s.HealthTimeout = time.Hour
	a, stop := f.startAgentWith(func(c *Config) { c.Settings = s })
	defer func() { _ = stop() }()
	waitFor(t, "the plugin probed not ready by the agent", func() bool {
		st := a.Status()
		return len(st.Plugins) == 1 && st.Plugins[0].Health == "not ready" && f.plugin("sys").Health() == engine.PluginNotReady
	})
	// Time for the housekeeping loop to run the start-up reconcile if it thinks it may.
	time.Sleep(2 * time.Second)
	if a.Ready() {
		t.Fatalf("the agent reported ready (start-up restore run, READY=1) while plugin %q, registered without an exec block, says it is not ready "+
			"and its health timeout (%s) has not passed; log:\n%s", "sys", s.HealthTimeout, f.logs)
	}
}

// The same for such a plugin not reachable yet at the agent's start (its socket not made: its
// own supervisor is starting it at boot): the runner settled it at its first probe ("need not
// wait for it"), so the agent reported ready with its mounts not restored. It waits up to the
// health timeout now, and is ready once the plugin answers ready.
func TestUnreachablePluginWithoutAnExecBlockHoldsTheStartupRestoreBack(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "late.sock")
	stop := csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	f.register(spec.Plugin{ID: "late", Type: spec.PluginMonolith, Socket: socket})
	stop()
	s := testSettings
	s.HealthTimeout = time.Hour
	a, stopAgent := f.startAgentWith(func(c *Config) { c.Settings = s })
	defer func() { _ = stopAgent() }()
	waitFor(t, "the plugin probed unhealthy by the agent", func() bool {
		st := a.Status()
		return len(st.Plugins) == 1 && st.Plugins[0].Health != "" && st.Plugins[0].Health != "healthy"
	})
	time.Sleep(2 * time.Second)
	if a.Ready() {
		t.Fatalf("the agent reported ready while plugin %q, registered without an exec block, has not answered yet and its health timeout (%s) has not passed; log:\n%s",
			"late", s.HealthTimeout, f.logs)
	}
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	waitFor(t, "the agent ready once the plugin answers", a.Ready)
}

// docs/agent.md: "A plugin another supervisor runs (systemd, a container runtime, another
// agent) is an honest setup", and a plugin restarted with other capabilities gets an event
// ("When a plugin restarts, volctl reconnects and fingerprints it again"). A plugin the
// config declares as a monolith, registered and used so, whose process its own supervisor
// restarted with other flags (serving its node service alone, for now), is at the agent's next
// start (a reboot, an upgrade) a plugin answering without CONTROLLER_SERVICE. registerDeclared
// takes the registration's ErrInvalid for a config that can never run and Run returns it: the
// whole agent refuses to start (exit 2), so no other plugin is started or supervised and no
// mount restored, while the same plugin found so by registerAgain a minute later, or by a probe
// while the agent runs, is logged and the agent goes on. Its advice ("declare it as type
// node") takes away the controller the volumes need once the plugin serves it again. Correct:
// the agent runs, supervising its other plugins, and names the plugin that answers as another
// type than declared (logged, as registerAgain does), without refusing everything.
// Found by helper review74.
func TestPluginAnsweringAsAnotherTypeAtStartDoesNotStopTheWholeAgent(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "sys.sock")
	stopFirst := csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	sys := spec.Plugin{ID: "sys", Type: spec.PluginMonolith, Socket: socket}
	f.register(sys)
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "sys", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	stopFirst()
	// Restarted by its own supervisor with other flags: its node service alone.
	cfg := csitest.DefaultMemConfig()
	cfg.Plugin.ControllerService = false
	stopNodeOnly := csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)))

	hp := f.execPlugin("hp", "hostpath")
	a, err := New(Config{Engine: f.e, Settings: testSettings, Now: f.agentClock(), Plugins: []spec.Plugin{sys, hp},
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	hpHealthy := func() bool {
		ps, err := f.e.Plugins(f.ctx)
		for _, p := range ps {
			if p.ID == "hp" {
				return err == nil && p.Healthy
			}
		}
		return false
	}
	for !hpHealthy() {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("the agent refused to start (Run: %v) because plugin %q answers without the controller service it was declared with: "+
				"plugin %q, declared beside it, was never started, and no mount is restored; log:\n%s", err, "sys", "hp", f.logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for plugin hp to be started; log:\n%s", f.logs)
		}
	}
	if !strings.Contains(f.logs.String(), "answers as another type than declared") {
		t.Errorf("the agent's log does not name plugin sys as answering as another type:\n%s", f.logs)
	}
	// Its supervisor restarts it as declared: the agent's next try registers it.
	stopNodeOnly()
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	waitFor(t, "plugin sys registered once it answers as declared", func() bool {
		return strings.Contains(f.logs.String(), "it could not be registered when the agent started")
	})
}

// A declared plugin whose socket is not there at the agent's start and whose process, once
// there, answers as another type than declared is named so in the log, once: the retries'
// finding was not logged, and the only line said its socket did not exist. Found by the own
// review of the change above (helper review74).
func TestLateDeclaredPluginAnsweringAsAnotherTypeIsNamedInTheLog(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "late.sock")
	sp := spec.Plugin{ID: "late", Type: spec.PluginMonolith, Socket: socket}
	stop := f.startAgent(testSettings, sp)
	defer func() { _ = stop() }()
	waitFor(t, "the agent to try the declared plugin", func() bool { return strings.Contains(f.logs.String(), "registering a declared plugin") })
	cfg := csitest.DefaultMemConfig()
	cfg.Plugin.ControllerService = false
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	waitFor(t, "the log to name plugin late as answering as another type", func() bool {
		return strings.Contains(f.logs.String(), "answers as another type than declared")
	})
	time.Sleep(10 * testSettings.ProbeInterval) // more tries
	if n := strings.Count(f.logs.String(), "answers as another type than declared"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, f.logs)
	}
}
