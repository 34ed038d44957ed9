package agent

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestDeclaredPluginWhoseRegistrationFailsAnotherWayLaterIsNamedInTheLog: a plugin the config
// declares without an exec block, whose socket is not there yet at the agent's start, is logged
// once ("registering a declared plugin ... socket ... does not exist", "the agent tries again
// every probe_interval") and tried again by registerPending, which says nothing more of a try
// that fails (registerAgain: `case err != nil: return false`). When the socket appears and the
// process behind it fails the registration for another reason (here its GetPluginInfo fails:
// a plugin whose backend is down, a hung one, another driver), the plugin stays unregistered,
// unprobed, absent from /healthz and from `volctl status`, for as long as the agent runs,
// while the one line the log holds about it still says its socket does not exist: the user
// looks, finds the socket there, and nothing says what keeps the plugin out. Correct: a try
// that fails for another reason than the one logged is logged (once per reason, as
// logPassFailure does for passes), naming what now stops the registration. Found by helper
// review78 (agent).
func TestDeclaredPluginWhoseRegistrationFailsAnotherWayLaterIsNamedInTheLog(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "late.sock")
	sp := spec.Plugin{ID: "late", Type: spec.PluginMonolith, Socket: socket}
	stop := f.startAgent(testSettings, sp)
	defer func() { _ = stop() }()
	waitFor(t, "the agent to try the declared plugin", func() bool {
		return strings.Contains(f.logs.String(), "registering a declared plugin")
	})
	if !strings.Contains(f.logs.String(), "does not exist") {
		t.Fatalf("precondition: the first failure is not the socket missing:\n%s", f.logs)
	}
	faults := csitest.NewFaults()
	faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Code: codes.Unavailable, Message: "backend array offline"})
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	waitFor(t, "several tries of the registration against the plugin now serving its socket", func() bool {
		return faults.Calls(csi.RPCGetPluginInfo) >= 3
	})
	if ps, err := f.e.Plugins(f.ctx); err != nil || len(ps) != 0 {
		t.Fatalf("precondition: plugins registered = %+v, %v; want none (every try failed)", ps, err)
	}
	if !strings.Contains(f.logs.String(), "backend array offline") {
		t.Errorf("declared plugin %q: its socket now exists and every registration try fails on the plugin's answer (GetPluginInfo: %q), "+
			"but the agent's log still says only that its socket does not exist; want the new reason logged:\n%s",
			"late", "backend array offline", f.logs)
	}
	// Once per reason, not per try.
	tries := faults.Calls(csi.RPCGetPluginInfo)
	waitFor(t, "more tries", func() bool { return faults.Calls(csi.RPCGetPluginInfo) >= tries+3 })
	if n := strings.Count(f.logs.String(), "backend array offline"); n != 1 {
		t.Errorf("the new reason logged %d times over several tries; want once:\n%s", n, f.logs)
	}
	// The backend back: the next try registers the plugin, and says so.
	faults.Clear()
	waitFor(t, "plugin late registered once it answers", func() bool {
		return strings.Contains(f.logs.String(), "it could not be registered when the agent started")
	})
}

// TestAgentIsNotReadyOnceItBeginsToStop: /healthz "answers the same readiness over HTTP" as
// READY=1 on $NOTIFY_SOCKET (docs/metrics.md, Readiness), and the agent sends STOPPING=1 when
// it begins to stop. Agent.Ready (Status.Ready, /healthz, volctl_agent_ready) is never set
// back: while the agent stops (its loops ended, its plugins being counted, sent SIGTERM and
// waited for, up to twice stop_timeout and 5 s), /healthz still answers 200 "ready": true,
// listing the plugins it is killing as "healthy", and the metric stays 1: a health checker or
// a unit ordered on the endpoint is told the host's volumes are served by an agent that has
// told systemd it is stopping. Correct: once the agent begins to stop (STOPPING=1), it is not
// ready: Status.Ready false (503). Found by helper review78 (agent).
func TestAgentIsNotReadyOnceItBeginsToStop(t *testing.T) {
	f := newFixture(t)
	var (
		mu    sync.Mutex
		told  []string
		ready []bool // Status().Ready when the agent had counted the plugin's mounts to stop it
	)
	var a *Agent
	a, stop := f.startAgentWith(func(c *Config) {
		c.Plugins = []spec.Plugin{f.execPlugin("hp", "hostpath")}
		c.Notify = func(state string) error {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, state)
			return nil
		}
		c.afterCount = func(string) {
			st := a.Status()
			mu.Lock()
			defer mu.Unlock()
			ready = append(ready, st.Ready)
		}
	})
	waitFor(t, "the agent ready", a.Ready)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) < 2 || told[len(told)-1] != "STOPPING=1" || len(ready) != 1 {
		t.Fatalf("precondition: told the service manager %q, the stop counted %d plugins; want READY=1 then STOPPING=1, and hp counted once", told, len(ready))
	}
	if ready[0] {
		t.Errorf("while stopping (STOPPING=1 sent, plugin hp about to be sent SIGTERM) the agent's Status (/healthz) said ready: true; want not ready once it begins to stop")
	}
}

// TestNotReadyStatusSaysWhatKeepsTheAgentNotReady: the agent is not ready until a start-up pass
// looks at everything (TestAgentIsNotReadyAfterAStartupPassThatLookedAtNothing), and while the
// passes fail before they look (the mount table unreadable, the state dir read-only) that lasts
// as long as the cause. What keeps it not ready is said once, in one warning at the start;
// /healthz (agent.Status, its 503 body) says "ready": false beside every plugin "healthy", and
// nothing else, so an operator (or a probe's log) reading it an hour later sees an agent whose
// plugins are all well refusing to be ready, for no reason it can find; `volctl status` says
// nothing of the agent either. Correct: the status served while not ready says why: what it
// waits for (plugins not yet settled, or the start-up pass's failure, here the unreadable mount
// table): Status.WaitingFor. Found by helper review78 (agent).
func TestNotReadyStatusSaysWhatKeepsTheAgentNotReady(t *testing.T) {
	f := newFixture(t)
	mounts := &unreadableMounts{lostMounts: &lostMounts{f: f}}
	f.openOnMounts(mounts)
	f.claimOnMem(csitest.DefaultMemConfig())
	mounts.failing.Store(true) // for as long as the test runs
	a, stop := f.startAgentWith(func(c *Config) {})
	defer func() { _ = stop() }()
	waitFor(t, "the agent to say it is not ready", func() bool {
		return strings.Contains(f.logs.String(), "agent not ready")
	})
	st := a.Status()
	if st.Ready || len(st.Plugins) != 1 || st.Plugins[0].Health != "healthy" {
		t.Fatalf("precondition: status = %+v; want not ready, plugin mem healthy", st)
	}
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "too many open files") {
		t.Errorf("/healthz's body while the agent is kept not ready by its start-up reconcile failing (the mount table unreadable) says nothing of why:\n%s\n"+
			"want it to say what keeps the agent not ready (the pass's error)", body)
	}
	// The mount table readable again: a re-driven pass looks at everything, the agent is ready,
	// and its status says it waits for nothing.
	mounts.failing.Store(false)
	waitFor(t, "the agent to become ready", func() bool { return a.Ready() })
	if st := a.Status(); !st.Ready || st.WaitingFor != "" {
		t.Errorf("status once ready: %+v; want ready, waiting for nothing", st)
	}
}
