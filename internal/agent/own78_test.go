package agent

import (
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// stallingMounts is unreadableMounts whose next read by a reconcile pass, once stall is set,
// waits for release: a pass the test holds mid-way.
type stallingMounts struct {
	*unreadableMounts
	stall   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (m *stallingMounts) MountsUnder(dir string) (map[string]bool, error) {
	if strings.Contains(string(debug.Stack()), "agent.(*Agent).reconcile") && m.stall.CompareAndSwap(true, false) {
		close(m.entered)
		<-m.release
	}
	return m.unreadableMounts.MountsUnder(dir)
}

// TestStoppingAgentStillSaysItIsStoppingOnceAPassInFlightEnds: once the agent begins to stop it
// says so (Run: waitFor("nothing: the agent is stopping"), Status.WaitingFor, /healthz's 503
// body), and /healthz keeps being served while it stops its plugins (up to twice stop_timeout).
// But a re-driven reconcile pass in flight when the stop begins (the agent not ready yet: its
// passes failed before they looked) ends, cut short, after that, and housekeeping's passReady
// calls waitForWholePass with no look at ctx: WaitingFor is overwritten with "a reconcile pass
// that looks at everything (passes are re-driven until one does); the last failed: ...", a
// promise of passes no one will run, for the rest of the stop. Correct: once the agent begins
// to stop, what it says it waits for stays its stop (passReady, like the start-up branch, says
// nothing when ctx has ended).
// Found by helper review78 (own2).
func TestStoppingAgentStillSaysItIsStoppingOnceAPassInFlightEnds(t *testing.T) {
	f := newFixture(t)
	mounts := &stallingMounts{unreadableMounts: &unreadableMounts{lostMounts: &lostMounts{f: f}},
		entered: make(chan struct{}), release: make(chan struct{})}
	f.openOnMounts(mounts)
	f.claimOnMem(csitest.DefaultMemConfig())
	mounts.failing.Store(true)
	stopping := make(chan struct{})
	s := testSettings
	s.GCInterval, s.ReconcileInterval = time.Hour, time.Hour // the passes are the re-driven ones
	a, stop := f.startAgentWith(func(c *Config) {
		c.Settings = s
		c.Notify = func(state string) error {
			if state == "STOPPING=1" {
				close(stopping)
			}
			return nil
		}
	})
	waitFor(t, "the agent to say it is not ready", func() bool {
		return strings.Contains(f.logs.String(), "agent not ready")
	})
	mounts.stall.Store(true)
	select {
	case <-mounts.entered:
	case <-time.After(30 * time.Second):
		close(mounts.release)
		t.Fatalf("precondition: no re-driven reconcile pass read the mount table")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-stopping:
	case <-time.After(30 * time.Second):
		close(mounts.release)
		t.Fatalf("precondition: the agent did not begin to stop")
	}
	if st := a.Status(); st.Ready || !strings.Contains(st.WaitingFor, "stopping") {
		close(mounts.release)
		t.Fatalf("precondition: status once the agent began to stop = %+v; want not ready, waiting for its stop", st)
	}
	close(mounts.release) // the pass in flight ends, cut short by the stop
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if st := a.Status(); !strings.Contains(st.WaitingFor, "stopping") {
		t.Errorf("the agent began to stop, and once the reconcile pass in flight ended its status says it waits for %q; "+
			"want it still to say it is stopping (no pass is re-driven any more)", st.WaitingFor)
	}
}

// TestDeclaredPluginFailingWithAnEphemeralPortIsLoggedOnce: registerAgain now logs a declared
// plugin's registration failure again whenever its words change (logRegisterFailure), compared
// through engine.FailureWords, which masks IDs, times and durations but leaves numbers of
// fewer than 6 digits. A plugin whose failure names a TCP connection of its own (a Go driver
// returning its backend client's error as is: "read tcp 10.0.0.7:41234->10.0.0.9:443: read:
// connection reset by peer") has a new ephemeral port in every try's words: each try, every
// probe_interval, logs a new warning for the same failure, where before registerAgain logged
// none (thousands a day at the defaults, the flood logPassFailure was fixed to avoid).
// Correct: the same failure is logged once, whatever ephemeral port or address its words
// carry; a failure for another reason is still logged.
// Found by helper review78 (own2).
func TestDeclaredPluginFailingWithAnEphemeralPortIsLoggedOnce(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "tcp.sock")
	faults := csitest.NewFaults()
	const tries = 12
	for i := range tries {
		faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Code: codes.Unavailable, Times: 1,
			Message: fmt.Sprintf("get backend status: read tcp 10.0.0.7:%d->10.0.0.9:443: read: connection reset by peer", 41230+7*i)})
	}
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	stop := f.startAgent(testSettings, spec.Plugin{ID: "tcp", Type: spec.PluginMonolith, Socket: socket})
	defer func() { _ = stop() }()
	waitFor(t, "the plugin registered once its faults are used up", func() bool {
		return strings.Contains(f.logs.String(), "it could not be registered when the agent started")
	})
	if n := faults.Calls(csi.RPCGetPluginInfo); n < tries {
		t.Fatalf("precondition: GetPluginInfo called %d times; want the %d failing tries first", n, tries)
	}
	if n := strings.Count(f.logs.String(), "connection reset by peer"); n != 1 {
		t.Errorf("declared plugin %q failed its registration %d times the same way (a connection reset, each from another ephemeral port), "+
			"and the agent logged it %d times; want once", "tcp", tries, n)
	}
}

// TestDeclaredPluginTryCutShortByTheAgentsStopIsNotLoggedAsAFailure: a declared plugin whose
// registration failed is tried again every probe_interval (registerAgain), and a try failing
// another way than the last logged is now logged as a warning ("registering a declared plugin
// ... the agent tries again every probe_interval until it succeeds"). A try in flight when the
// agent stops (a plugin slow to answer GetPluginInfo) is cut short by the stop: its error, the
// context canceled with the engine's "(interrupted: nothing is registered; run the register
// again)", has other words than the last logged, and is logged as the registration's new
// failure, telling the user, as the agent stops, to run a register the agent does itself and
// that the agent will try again. Correct: a try cut short by the agent's stop is no failure of
// the plugin's; nothing is logged of it.
// Found by helper review78 (own2).
func TestDeclaredPluginTryCutShortByTheAgentsStopIsNotLoggedAsAFailure(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "slow.sock")
	faults := csitest.NewFaults()
	faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Code: codes.Unavailable, Message: "backend array offline", Times: 1})
	gate := make(chan struct{}) // never opened: every later try waits until its call is cut short
	faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Gate: gate})
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	stop := f.startAgent(testSettings, spec.Plugin{ID: "slow", Type: spec.PluginMonolith, Socket: socket})
	defer func() { _ = stop() }()
	waitFor(t, "a later try held in GetPluginInfo", func() bool { return faults.Held() >= 1 })
	if !strings.Contains(f.logs.String(), "backend array offline") {
		t.Fatalf("precondition: the first failure was not logged:\n%s", f.logs)
	}
	before := len(f.logs.String()) // the try is held until the stop cuts it short
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if after := f.logs.String()[before:]; strings.Contains(after, "registering a declared plugin") {
		t.Errorf("a registration try of declared plugin %q, cut short by the agent's stop, was logged as its new failure:\n%s\n"+
			"want nothing logged of a try the stop ended", "slow", after)
	}
}

// TestAgentRegisteringItsDeclaredPluginsSaysWhatItWaitsFor: Status.WaitingFor "says, while the
// agent is not ready, what it waits for" (observe.go), so that a 503 from /healthz is no longer
// a bare "ready": false. /healthz is served from before Run (cli's agent command), and Run
// first registers the config file's plugins one by one (registerDeclared), each up to the
// fingerprint's RPC timeouts (5 s each) when its plugin is slow or hung, before housekeeping
// sets the first WaitingFor. All that while the status is not ready and says nothing of why,
// the very 503 the field was added to explain. Correct: from the start, WaitingFor says what
// the agent waits for (here, the registration of its declared plugin "slow").
// Found by helper review78 (own2).
func TestAgentRegisteringItsDeclaredPluginsSaysWhatItWaitsFor(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(f.dir, "slow.sock")
	faults := csitest.NewFaults()
	gate := make(chan struct{})
	faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Gate: gate, Times: 1})
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	a, stop := f.startAgentWith(func(c *Config) {
		c.Plugins = []spec.Plugin{{ID: "slow", Type: spec.PluginMonolith, Socket: socket}}
	})
	defer func() { _ = stop() }()
	waitFor(t, "the agent's registration of plugin slow held in GetPluginInfo", func() bool { return faults.Held() >= 1 })
	st := a.Status()
	close(gate)
	if st.Ready {
		t.Fatalf("precondition: the agent is ready while it registers its declared plugins: %+v", st)
	}
	if st.WaitingFor == "" {
		t.Errorf("while the agent registers its declared plugin %q (its GetPluginInfo not answered yet), its status is not ready and says it waits for nothing: %+v; "+
			"want what it waits for said (the declared plugins' registration)", "slow", st)
	}
}
