// Package agent is `volctl agent`: a foreground daemon that starts and supervises the plugins
// declared with an exec block, probes every registered plugin on a loop, restores and
// re-drives claims at start and on timers, and stops its plugins last, never under mounts.
// It works through the engine only, like the command line.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volctl/volctl/internal/backoff"
	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
)

// The defaults of the agent's intervals (docs/architecture.md, Plugins).
const (
	DefaultProbeInterval      = 5 * time.Second
	DefaultProbeIntervalReady = 30 * time.Second
	DefaultHealthTimeout      = 30 * time.Second
	DefaultGCInterval         = time.Minute
	DefaultReconcileInterval  = time.Minute
	DefaultStopTimeout        = 10 * time.Second
	DefaultBackoffMin         = time.Second
	DefaultBackoffMax         = time.Minute
)

// Retry is the engine retry policy the agent runs with: more patient than a command's, since
// nobody waits on the agent and a claim it gives up on waits for the next pass.
var Retry = engine.RetryPolicy{Attempts: 6, Base: 500 * time.Millisecond, Max: 15 * time.Second}

// PassLockWait bounds how long the agent's reconcile passes and claim GC wait for one lock
// another volctl holds (engine.Config.PassLockWait): a command suspended (^Z) or hung while
// holding a volume's lock would otherwise hold up every other volume's restore and release, and
// every pass after. Past it, that volume is a problem of the pass, logged, and the next pass
// tries again (a create or publish may hold one longer; the pass skips it as well).
const PassLockWait = 30 * time.Second

// Settings are the agent's intervals. A zero field is unset: Merge keeps the other's value and
// withDefaults fills in the default.
type Settings struct {
	ProbeInterval      time.Duration // between probes until a plugin is ready
	ProbeIntervalReady time.Duration // between probes once it is
	HealthTimeout      time.Duration // how long a started plugin may stay unhealthy before a restart
	GCInterval         time.Duration // between passes releasing past claims
	ReconcileInterval  time.Duration // between reconcile passes (re-drive, restore)
	StopTimeout        time.Duration // from SIGTERM to SIGKILL when stopping a plugin
	BackoffMin         time.Duration // first wait before restarting a failed plugin
	BackoffMax         time.Duration // cap on that wait
}

// Merge returns s with every field that o sets replaced by o's.
func (s Settings) Merge(o Settings) Settings {
	a, b := reflect.ValueOf(&s).Elem(), reflect.ValueOf(o)
	for i := range a.NumField() {
		if !b.Field(i).IsZero() {
			a.Field(i).Set(b.Field(i))
		}
	}
	return s
}

// Validate refuses negative durations, naming the setting as the flag spells it.
func (s Settings) Validate() error {
	for _, f := range s.fields() {
		if *f.d < 0 {
			return fmt.Errorf("%s must be positive, got %s", f.name, *f.d)
		}
	}
	return nil
}

// fields names each setting as the config file and the flags spell it (with _ for -); the
// restart backoff's two, which neither sets (spec.AgentSettings), as tests know them.
func (s *Settings) fields() []struct {
	name string
	d    *time.Duration
} {
	return []struct {
		name string
		d    *time.Duration
	}{
		{"probe_interval", &s.ProbeInterval},
		{"probe_interval_ready", &s.ProbeIntervalReady},
		{"health_timeout", &s.HealthTimeout},
		{"gc_interval", &s.GCInterval},
		{"reconcile_interval", &s.ReconcileInterval},
		{"stop_timeout", &s.StopTimeout},
		{"restart_backoff_min", &s.BackoffMin},
		{"restart_backoff_max", &s.BackoffMax},
	}
}

func (s Settings) withDefaults() Settings {
	return Settings{
		ProbeInterval: DefaultProbeInterval, ProbeIntervalReady: DefaultProbeIntervalReady,
		HealthTimeout: DefaultHealthTimeout, GCInterval: DefaultGCInterval,
		ReconcileInterval: DefaultReconcileInterval, StopTimeout: DefaultStopTimeout,
		BackoffMin: DefaultBackoffMin, BackoffMax: DefaultBackoffMax,
	}.Merge(s)
}

// Config builds an Agent.
type Config struct {
	// Engine is the engine on the state dir, opened with Retry.
	Engine *engine.Engine
	// Logger gets the agent's log: plugin starts, exits, health changes, reconcile results.
	Logger *slog.Logger
	// Plugins are registered at start (the agent config file's plugin blocks).
	Plugins []spec.Plugin
	// Settings are the intervals; zero fields take the defaults.
	Settings Settings
	// Observer is told of probes, restarts, reconcile passes and readiness: the metrics. Nil
	// observes nothing.
	Observer Observer
	// Notify tells the service manager the agent's state ("READY=1", "STOPPING=1"). Nil is
	// SdNotify: systemd's notify protocol on $NOTIFY_SOCKET, a no-op without it.
	Notify func(state string) error
	// Now is the clock the health timeout and restart backoff are measured on (time.Now when
	// nil); tests move it by hand.
	Now func() time.Time

	// afterCount, for tests, runs when the agent has counted a plugin's mounts to stop it and
	// found none, before it signals the plugin.
	afterCount func(pluginID string)
	// restartWait, for tests, waits out a restart's backoff (the time until the next start on
	// the agent's clock): sleep, on the real clock, when nil. A test records the waits and
	// returns at once (TestAgentBacksOffAPluginThatExitsAtOnce), instead of waiting them out
	// and counting starts in a second of the real clock.
	restartWait func(ctx context.Context, d time.Duration) bool
}

// Agent is one running `volctl agent`.
type Agent struct {
	e    *engine.Engine
	log  *slog.Logger
	s    Settings
	decl []spec.Plugin
	// unregistered are the declared plugins whose registration failed for a reason a later
	// try may not meet (their socket not there yet): registerPending tries them again. Only
	// Run, then registerPending's goroutine, touch it.
	unregistered []spec.Plugin
	// inflight are the declared plugins whose first registration had not returned within
	// declaredBound at the start (a hung plugin): registerPending takes each one's result
	// when it comes, then tries it again if it failed. Same goroutines.
	inflight []inflight
	// registerFailed is, for each unregistered plugin, the words of the failure its registration
	// last logged (engine.FailureWords): a try failing the same way says nothing more, one
	// failing another way is logged (registerDeclared, registerAgain); same goroutines.
	registerFailed map[string]string
	now            func() time.Time
	runDir         string // pid files
	logDir         string // plugin output
	afterCount     func(pluginID string)
	restartWait    func(ctx context.Context, d time.Duration) bool

	kick chan struct{} // asks for a reconcile pass soon (a restarted plugin may have lost mounts)
	// unusable receives the error of a pass that found the state database unusable (replaced
	// under the agent, or damaged: store.Unusable), which stops the agent.
	unusable chan error

	obs    Observer
	notify func(state string) error
	ready  atomic.Bool // the start-up reconcile has run (Status.Ready)
	// waitingFor is what the agent waits for while not ready (Status.WaitingFor), scrubbed.
	waitingFor atomic.Pointer[string]
	// lastPassErr is the last reconcile pass's error, scrubbed ("" when none): what keeps the
	// agent not ready while passes fail before they look.
	lastPassErr string

	mu       sync.Mutex
	runners  map[string]*runner
	problems map[string]loggedProblem // reconcile problems already logged, to log each once (logProblems)
	// passFailure and gcFailure are the failures of the last reconcile and claim GC passes that
	// found no problem of their own, as logged (logPassFailure): "" when they ran.
	passFailure, gcFailure string
	gcProblems             map[string]loggedProblem // the same of claim GC's
	// logWarned are the plugins whose log was found replaced (trimOrphanedLog), warned once.
	logWarned map[string]bool
	// rotateFailed is each plugin's last log rotation failure, warned of when it changes
	// (rotationFailed): a standing one was a warning every check, 86,400 a day.
	rotateFailed map[string]string
	// mateWarned are the pairs of exec plugins on one socket (oneProcessPerSocket), told once.
	mateWarned map[string]bool
	// mates are, by the plugin ID whose runner runs a socket's process, the other IDs on its
	// socket, declared with an exec block or without one, probed only (oneProcessPerSocket):
	// that runner records their supervision with its own (noteMates). Under mu.
	mates map[string][]string
	// leftRunning are the processes the agent started and left running under mounts with no
	// runner of their own (their plugin deregistered, or registered again without an exec
	// block), by the plugin ID whose log they write to: trimLogs keeps that log bounded while
	// they run. Before, it grew unchecked, on the file system the store is on, for as long as
	// they ran (TestLogOfAPluginLeftRunningStaysBounded). Under mu.
	leftRunning map[string]*process
}

// New builds an agent; Run runs it.
func New(cfg Config) (*Agent, error) {
	if cfg.Engine == nil {
		return nil, errors.New("agent: no engine")
	}
	s := cfg.Settings.withDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The agent logs what the engine words from plugin data (reconcile's problems, a
	// plugin's name): no secret a plugin echoed there may reach the log.
	log = cfg.Engine.RedactLogger(log)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	restartWait := cfg.restartWait
	if restartWait == nil {
		restartWait = sleep
	}
	dir := cfg.Engine.StateDir()
	obs, notify := cfg.Observer, cfg.Notify
	if obs == nil {
		obs = nopObserver{}
	}
	if notify == nil {
		notify = SdNotify
	}
	return &Agent{
		obs: obs, notify: notify,
		e: cfg.Engine, log: log, s: s, decl: cfg.Plugins, now: now, afterCount: cfg.afterCount,
		restartWait: restartWait,
		runDir:      filepath.Join(dir, "run"), logDir: filepath.Join(dir, "logs"),
		kick: make(chan struct{}, 1), unusable: make(chan error, 1), runners: map[string]*runner{}, problems: map[string]loggedProblem{}, logWarned: map[string]bool{}, rotateFailed: map[string]string{},
		leftRunning: map[string]*process{},
		mateWarned:  map[string]bool{},
	}, nil
}

// Run runs the agent until ctx ends (SIGTERM, SIGINT), or a reconcile pass finds the state
// database unusable (replaced under it, or damaged: its error is Run's), then stops its loops
// and, last, the plugins it supervises that have no mounts. It refuses to start while another
// agent runs on the same state dir (an engine.ErrConflict), naming the process that holds the
// agent lock; run/agent.pid's pid only when /proc names none: a killed agent's file stays, its pid
// given to any process since, and the next agent writes its own only after taking the lock.
func (a *Agent) Run(ctx context.Context) error {
	release, named, err := a.e.LockAgent()
	if err != nil {
		if pid := readAgentPid(a.runDir); pid != "" && !named && errors.Is(err, engine.ErrConflict) {
			err = fmt.Errorf("%w (pid %s)", err, pid)
		}
		return err
	}
	defer release()
	for _, d := range []string{a.runDir, a.logDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	agentPid := filepath.Join(a.runDir, "agent.pid")
	if err := writeRunFile(agentPid, []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	// Removed only while it is this agent's: the state dir put in place of this one under it
	// holds a second agent's (TestAgentStoppingAfterItsStateDirWasReplacedKeepsTheNewAgentsPidFile).
	defer func() {
		if readAgentPid(a.runDir) == strconv.Itoa(os.Getpid()) {
			_ = os.Remove(agentPid)
		}
	}()

	// A plugin that daemonises is re-parented to the agent, which finds it and supervises it
	// (daemon.go).
	if err := becomeSubreaper(); err != nil {
		a.log.Warn("the agent cannot make itself a child subreaper: a plugin that daemonises (leaves its process group) is not supervised", "err", err)
	}
	a.log.Info("agent starting", "state_dir", a.e.StateDir(), "probe_interval", a.s.ProbeInterval,
		"probe_interval_ready", a.s.ProbeIntervalReady, "health_timeout", a.s.HealthTimeout,
		"gc_interval", a.s.GCInterval, "reconcile_interval", a.s.ReconcileInterval, "stop_timeout", a.s.StopTimeout)
	// Said from the first: /healthz answers before the plugins are registered, and a 503 with
	// no word of why was what waiting_for is for (TestAgentRegisteringItsDeclaredPluginsSaysWhatItWaitsFor).
	a.waitFor("the registration of the declared plugins, then their first probes and the start-up reconcile")
	if err := a.registerDeclared(ctx); err != nil {
		return err
	}

	a.letGoOfGoneEnvs(ctx)

	loops, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	var wg sync.WaitGroup
	a.sync(loops, &wg)
	crash.GoGroup(&wg, func() { a.housekeeping(loops, &wg) })
	crash.GoGroup(&wg, func() { a.registerPending(loops) })
	crash.GoGroup(&wg, func() { a.keepLogs(loops) })
	crash.GoGroup(&wg, func() { reapOnSIGCHLD(loops) })
	var stopErr error
	select {
	case <-ctx.Done():
	case err := <-a.unusable:
		stopErr = fmt.Errorf("agent: %w", err)
		a.log.Error("agent stopping: the state database cannot be used", "err", err)
	}
	a.log.Info("agent stopping")
	// Not ready from here on, as systemd is told: /healthz answered 200 "ready" while the agent
	// stopped its plugins (TestAgentIsNotReadyOnceItBeginsToStop).
	a.waitFor("nothing: the agent is stopping")
	a.ready.Store(false)
	a.obs.Stopping()
	a.tell("STOPPING=1")
	stopLoops()
	wg.Wait()
	a.stopPlugins()
	a.log.Info("agent stopped")
	return stopErr
}

// registerDeclared registers the config file's plugins. An invalid declaration stops the agent;
// one that cannot be registered now (a plugin without an exec block whose socket is not there
// yet: another supervisor starts it, maybe after the agent; an exec plugin is recorded even
// when not running) is logged and left to registerPending, which tries it again on every sync
// pass, since the service manager restarting the agent would not make it reachable sooner.
//
// The plugins are registered at once, those on one socket one after another, and waited for
// within declaredBound: one whose process is hung (its socket accepts, GetPluginInfo never
// answers) held back every plugin declared after it, the agent's own supervised ones too, and
// the start-up restore and READY=1 with them, for its RPC timeout, and as much again for each
// further one (TestHungDeclaredPluginDoesNotHoldBackTheOtherPluginsStart). One not answered
// by then is left in flight for registerPending, said in the log; an invalid declaration found
// only then is logged as an error, as registerPending's are, not a stop.
func (a *Agent) registerDeclared(ctx context.Context) error {
	if err := checkDeclaredSockets(a.decl); err != nil {
		return err
	}
	done := make([]chan registered, len(a.decl))
	for i := range done {
		done[i] = make(chan registered, 1)
	}
	for _, group := range socketGroups(a.decl) {
		crash.Go(func() {
			for _, i := range group {
				info, err := a.e.RegisterDeclaredPlugin(ctx, a.decl[i])
				done[i] <- registered{info, err}
			}
		})
	}
	bound := time.NewTimer(declaredBound)
	defer bound.Stop()
	late := false
	for i, sp := range a.decl {
		var r registered
		if !late {
			select {
			case r = <-done[i]:
			case <-bound.C:
				late = true
			}
		}
		if late {
			select {
			case r = <-done[i]:
			default:
				a.log.Warn(fmt.Sprintf("declared plugin %q has not answered its registration within %s: the other plugins start, and it is registered once it answers", sp.ID, declaredBound), "plugin", sp.ID)
				a.inflight = append(a.inflight, inflight{sp: sp, done: done[i]})
				continue
			}
		}
		switch {
		case errors.Is(r.err, engine.ErrAnsweredAsAnotherType):
			// The running process's word, not the config's: one plugin restarted by its own
			// supervisor with other flags stopped the whole agent, every other plugin
			// unsupervised and no mount restored
			// (TestPluginAnsweringAsAnotherTypeAtStartDoesNotStopTheWholeAgent).
			a.logRegisterFailure(sp.ID, r.err)
			a.unregistered = append(a.unregistered, sp)
		case errors.Is(r.err, engine.ErrInvalid):
			return r.err
		case r.err != nil:
			if ctx.Err() == nil { // a try the agent's stop cut short is no failure to report
				a.logRegisterFailure(sp.ID, r.err)
			}
			a.unregistered = append(a.unregistered, sp)
		default:
			a.log.Info("registered plugin", "plugin", sp.ID, "provider", r.info.Provider, "supervised", r.info.Supervised)
		}
	}
	return nil
}

// declaredBound is how long the agent's start waits for the declared plugins' first
// registrations, all run at once, before it starts those that answered (registerDeclared).
const declaredBound = 2 * time.Second

// registered is one registration's answer.
type registered struct {
	info engine.PluginInfo
	err  error
}

// inflight is a declared plugin whose first registration is still running (registerDeclared).
type inflight struct {
	sp   spec.Plugin
	done <-chan registered
}

// socketGroups partitions decl's indices, in their order, into groups of plugins sharing a
// socket (shareSocket) or an ID (a split plugin's halves): registered one after another, as
// before, since one's registration joins or replaces the other's.
func socketGroups(decl []spec.Plugin) [][]int {
	var groups [][]int
	for i, sp := range decl {
		placed := false
		for g, group := range groups {
			for _, j := range group {
				if shareSocket(sp, decl[j]) || sp.ID == decl[j].ID {
					groups[g] = append(groups[g], i)
					placed = true
					break
				}
			}
			if placed {
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	return groups
}

// registerPending tries again, every probe interval until each succeeds, to register the
// declared plugins registerDeclared could not, saying nothing more of one that fails again (its
// failure was logged once): it logs the registration that succeeds (the next sync pass starts
// probing the plugin), and gives up on one the engine now refuses as invalid, logged as an
// error, since only a corrected config and an agent restart change that; one answering on its
// socket as another type than declared is tried again, since its own supervisor restarting it
// as declared changes that (engine.ErrAnsweredAsAnotherType). It runs on its own goroutine: a plugin whose socket
// is there but does not answer holds only its own retries, not housekeeping's passes.
func (a *Agent) registerPending(ctx context.Context) {
	if len(a.unregistered) == 0 && len(a.inflight) == 0 {
		return
	}
	t := time.NewTicker(a.s.ProbeInterval)
	defer t.Stop()
	for len(a.unregistered) > 0 || len(a.inflight) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.landed(ctx)
			a.registerAgain(ctx)
		}
	}
}

// landed takes the answers of the first registrations still in flight at the start that have
// come (registerDeclared): each handled as a try of registerAgain's, a failure tried again.
func (a *Agent) landed(ctx context.Context) {
	a.inflight = slices.DeleteFunc(a.inflight, func(f inflight) bool {
		select {
		case r := <-f.done:
			if !a.registeredAgain(ctx, f.sp, r.info, r.err) {
				a.unregistered = append(a.unregistered, f.sp)
			}
			return true
		default:
			return false
		}
	})
}

// registerAgain is one of registerPending's tries.
func (a *Agent) registerAgain(ctx context.Context) {
	a.unregistered = slices.DeleteFunc(a.unregistered, func(sp spec.Plugin) bool {
		info, err := a.e.RegisterDeclaredPlugin(ctx, sp)
		return a.registeredAgain(ctx, sp, info, err)
	})
}

// registeredAgain handles a later registration's answer of declared plugin sp: it logs the
// registration that succeeded, or gives up on one the engine refuses as invalid; done is false
// for one to try again.
func (a *Agent) registeredAgain(ctx context.Context, sp spec.Plugin, info engine.PluginInfo, err error) (done bool) {
	switch {
	case errors.Is(err, engine.ErrInvalid) && !errors.Is(err, engine.ErrAnsweredAsAnotherType):
		// (One answering as another type is ErrInvalid too: its supervisor may restart it
		// as declared, and it is tried again.)
		a.log.Error("registering a declared plugin: giving up until the agent restarts with its declaration corrected", "plugin", sp.ID, "err", err)
		return true
	case err != nil:
		// Logged the first time a try fails another way than the last logged: one whose
		// socket was not there at the start said only that, and its answer as another type,
		// or a failure of the process now serving the socket, never
		// (TestLateDeclaredPluginAnsweringAsAnotherTypeIsNamedInTheLog,
		// TestDeclaredPluginWhoseRegistrationFailsAnotherWayLaterIsNamedInTheLog).
		// A try the agent's stop cut short is no failure: it was told to run a register the
		// agent does itself, as it exited
		// (TestDeclaredPluginTryCutShortByTheAgentsStopIsNotLoggedAsAFailure).
		if ctx.Err() == nil {
			a.logRegisterFailure(sp.ID, err)
		}
		return false // tried again
	}
	delete(a.registerFailed, sp.ID)
	a.log.Info("registered plugin", "plugin", sp.ID, "provider", info.Provider, "supervised", info.Supervised,
		"note", "it could not be registered when the agent started")
	return true
}

// registerFailureWords is what tells one registration failure from another for the log: its
// words with every run of digits one "#", coarser than FailureWords (which keeps short numbers:
// a node's "node-2"), since a failure a plugin's driver returns as it is may carry an ephemeral
// port or a counter that changes at every try, each a warning of its own
// (TestDeclaredPluginFailingWithAnEphemeralPortIsLoggedOnce).
func registerFailureWords(err error) string {
	var b strings.Builder
	digits := false
	for _, r := range engine.FailureWords(err.Error()) {
		isDigit := r >= '0' && r <= '9'
		if isDigit && !digits {
			b.WriteByte('#')
		} else if !isDigit {
			b.WriteRune(r)
		}
		digits = isDigit
	}
	return b.String()
}

// logRegisterFailure logs that declared plugin id could not be registered (err), unless its last
// logged failure was the same: a process answering as another type than declared as an error,
// any other failure (its socket not there yet, its process failing the registration) as a
// warning.
func (a *Agent) logRegisterFailure(id string, err error) {
	words := registerFailureWords(err)
	if last, ok := a.registerFailed[id]; ok && last == words {
		return
	}
	if a.registerFailed == nil {
		a.registerFailed = map[string]string{}
	}
	a.registerFailed[id] = words
	if errors.Is(err, engine.ErrAnsweredAsAnotherType) {
		a.log.Error("registering a declared plugin: it answers as another type than declared", "plugin", id, "err", err,
			"then", "the agent tries again every probe_interval, until it answers as declared or the declaration is corrected")
		return
	}
	a.log.Warn("registering a declared plugin", "plugin", id, "err", err,
		"then", "the agent tries again every probe_interval until it succeeds")
}

// checkDeclaredSockets refuses a config declaring plugins on one socket with different exec
// blocks: one process serves a socket (oneProcessPerSocket), so one of the two commands would
// never run, and which one is the user's to say.
func checkDeclaredSockets(decl []spec.Plugin) error {
	for i, x := range decl {
		for _, y := range decl[i+1:] {
			if x.Exec != nil && y.Exec != nil && !reflect.DeepEqual(x.Exec, y.Exec) && shareSocket(x, y) {
				return configError(fmt.Sprintf("plugins %q and %q are declared on one socket with different exec blocks: "+
					"one process serves a socket, and it would run only one of the two commands; give them one exec block, or give each its own socket", x.ID, y.ID))
			}
		}
	}
	return nil
}

// configError is an agent config that can never run as written: an engine.ErrInvalid, as the
// engine's own refusals of a plugin block are (exit code 2).
type configError string

func (e configError) Error() string        { return string(e) }
func (e configError) Is(target error) bool { return target == engine.ErrInvalid }

// readAgentPid is the pid run/agent.pid records, "" when it records none: what is there is
// read only as a pid (a positive number), never handed on as it is to the error that names it.
func readAgentPid(runDir string) string {
	b, err := readStateFile(filepath.Join(runDir, "agent.pid"))
	if err != nil {
		return ""
	}
	pid := strings.TrimSpace(string(b))
	if n, err := strconv.Atoi(pid); err != nil || n <= 0 {
		return ""
	}
	return pid
}

// sync starts a runner for each registered plugin without one, and stops the runners of
// plugins deregistered or re-declared since. A re-declared plugin gets a new runner, which
// adopts the old process if it was left running.
func (a *Agent) sync(ctx context.Context, wg *sync.WaitGroup) {
	specs, err := a.e.PluginSpecs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("listing plugins", "err", err)
		}
		return
	}
	want := map[string]spec.Plugin{}
	for _, sp := range a.oneProcessPerSocket(specs) {
		want[sp.ID] = sp
	}
	a.mu.Lock()
	var gone []*runner
	for id, r := range a.runners {
		if sp, ok := want[id]; !ok || !reflect.DeepEqual(sp, r.spec) {
			gone = append(gone, r)
			delete(a.runners, id)
		}
	}
	a.mu.Unlock()
	inherit := map[string][]string{} // runner.leftUnder of a process the new runner adopts
	// The restarts of a plugin registered again, which its new runner counts on from: /healthz's
	// count, like volctl_plugin_restarts_total, is the agent's for the plugin ID until it is
	// deregistered. Before, it started again from 0 at any registration again, a timeout's
	// alone too, while the metric went on (TestHealthzRestartsSurviveARedeclaration).
	restarts := map[string]int{}
	handed := map[string]*runner{} // a gone runner whose plugin gets a new one, settled by it
	for _, r := range gone {
		if _, ok := want[r.spec.ID]; ok {
			r.handedOn.Store(true)
			handed[r.spec.ID] = r
		}
		r.cancel()
		<-r.done
		if sp, ok := want[r.spec.ID]; ok {
			restarts[r.spec.ID] = r.status().Restarts
			if r.proc != nil && sp.Exec != nil && r.declared != "" && !r.outdated() && execDigestOf(sp) == r.declared {
				// Only what volctl does with the plugin changed (its RPC timeout), not what its
				// process runs: the process runs on, and the new runner adopts it through its pid
				// file, as it adopts one left under mounts. Before, it was stopped and started
				// again, the plugin down meanwhile (TestAgentKeepsThePluginRunningWhenOnlyItsTimeoutChanges).
				a.log.Info("plugin declaration changed, not its exec block; supervising it anew, its process running on", "plugin", r.spec.ID, "pid", r.proc.pid)
				// What its earlier processes left under mounts goes to the runner that adopts
				// it (before, lost with this one: TestCrashedInstancesHelperIsStoppedAfterARedeclarationKeptTheProcess).
				inherit[r.spec.ID] = r.leftUnder
				continue
			}
			if r.proc != nil && sp.Exec != nil && r.proc.execDigest != "" {
				// Its exec block changed: the new runner adopts the process, outdated, and
				// replaces it by replaceOutdated's rules, as one left under mounts: not while it
				// has mounts, nor for an exec block that cannot start (a command mistyped), and
				// counted as a restart for exec_changed. Before, it was stopped here at once
				// when it had no mounts: the plugin down for good behind an exec block that
				// could not start, and the restart counted nowhere
				// (TestUnstartableExecBlockStopsNothingWithoutMounts, TestExecChangedWhileRunningIsCountedAsARestart).
				a.log.Info("plugin declaration changed; supervising it anew, its exec block changed: its process is replaced once it may be", "plugin", r.spec.ID, "pid", r.proc.pid)
				inherit[r.spec.ID] = r.leftUnder
				continue
			}
			a.log.Info("plugin declaration changed; supervising it anew", "plugin", r.spec.ID)
			if heir := execHeir(want, r.spec); sp.Exec == nil && r.proc != nil && heir != "" {
				// Another ID on its socket runs its process now (oneProcessPerSocket: one
				// registered since whose ID comes first, say): the process, which serves both
				// and their mounts, is that ID's to supervise, as at a deregistration (retire).
				// Before, it was left running unsupervised, said "registered again without an
				// exec block", and the heir's runner took it for a process no agent started,
				// probing it only (TestNewFirstIDOnASocketUnderMountsKeepsItsProcessSupervised).
				a.passOn(ctx, r, heir, fmt.Sprintf("shares its socket with plugin %q, which runs the socket's one process now (the first ID there with an exec block)", heir))
				continue
			}
			if !a.stopIfUnmounted(r, r.spec.ID) && sp.Exec == nil && r.proc != nil {
				a.leaveRunning(r.spec.ID, r.proc)
				// Nothing adopts it now: said, as plugin status says it (Supervision.Words).
				a.log.Warn(fmt.Sprintf("plugin %q was registered again without an exec block: the process the agent started for it (pid %d) is left running under its mounts, "+
					"and no agent supervises or stops it from now on; stop it yourself once it has none, before the plugin is started otherwise on its socket", r.spec.ID, r.proc.pid),
					"plugin", r.spec.ID, "pid", r.proc.pid)
			}
			continue
		}
		a.log.Info("plugin deregistered; no longer supervising it", "plugin", r.spec.ID)
		a.obs.PluginGone(r.spec.ID)
		a.retire(ctx, r, want)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range sortedIDs(want) {
		if a.runners[id] != nil || ctx.Err() != nil {
			continue
		}
		r := newRunner(a, want[id])
		r.sRestarts = restarts[id]
		r.leftUnder = inherit[id]
		if r.leftUnder == nil {
			r.leftUnder = readLeftUnder(a.runDir, id) // an earlier agent's, or runner's
		}
		a.runners[id] = r
		rctx, cancel := context.WithCancel(ctx)
		r.cancel = cancel
		crash.GoGroup(wg, func() { r.loop(rctx) })
		if old := handed[id]; old != nil {
			delete(handed, id)
			// On the successor's settled, or the agent's end: not the successor's own context,
			// which a sync replacing it again cancels, the successor then settled by its own
			// successor (TestStartupRestoreWaitsForAPluginRedeclaredTwiceBeforeItSettled).
			crash.Go(func() {
				select {
				case <-r.settled:
				case <-ctx.Done():
				}
				old.settle()
			})
		}
	}
	for _, old := range handed {
		old.settle() // no successor made (the agent stopping): nothing to wait for
	}
}

// retire deals with the process of a deregistered plugin's runner. When another plugin ID is
// registered on its socket (one process serves a socket: the deregistered ID ran it for both),
// the process is that ID's too, and so are its mounts: stopped as the deregistered ID's, which
// has none of its own, the process serving the other's mounts was stopped. It is handed to the
// ID on its socket with an exec block, now the one to run its process (oneProcessPerSocket):
// recorded under that ID's pid file and log, which that ID's new runner adopts, without a
// restart. With no such ID (those on the socket are probed only), it is counted and stopped as
// the socket's: left running while any ID on it has mounts, with a warning naming the one that
// is left without a supervisor.
func (a *Agent) retire(ctx context.Context, r *runner, want map[string]spec.Plugin) {
	var mate string
	for _, id := range sortedIDs(want) {
		if shareSocket(want[id], r.spec) && id != r.spec.ID {
			mate = id
			break
		}
	}
	heir := execHeir(want, r.spec)
	p := r.proc
	switch {
	case p == nil || mate == "":
		if !a.stopIfUnmounted(r, r.spec.ID) {
			a.leaveRunning(r.spec.ID, p)
		}
	case heir != "":
		a.passOn(ctx, r, heir, "deregistered")
	default:
		// Volumes the deregistered ID kept (--force) are no longer the socket's to the
		// engine: their mounts are counted as its own first.
		if m, err := a.e.PluginMounts(ctx, r.spec.ID); err == nil && !m.Any() && a.stopIfUnmounted(r, mate) {
			return
		}
		msg := fmt.Sprintf("plugin %q deregistered: its process (pid %d) serves plugin %q on the same socket, which has no exec block: nothing supervises it now; "+
			"give %q the exec block to have the agent supervise it again", r.spec.ID, p.pid, mate, mate)
		a.log.Warn(msg, "plugin", mate, "pid", p.pid)
		a.leaveRunning(r.spec.ID, p)
		// The IDs left on the socket had the deregistered ID's record of the process (noteMates):
		// it runs on, under their mounts, with no agent to stop or restart it.
		for _, id := range sortedIDs(want) {
			if shareSocket(want[id], r.spec) {
				_ = a.recordSupervision(ctx, id, supervision{mode: engine.SupervisionLeft, pid: p.pid, note: msg}, true)
			}
		}
	}
}

// execHeir is the plugin ID in want, other than sp's, on one of sp's sockets with an exec block
// (after oneProcessPerSocket, the one that runs the socket's process), "" when there is none.
func execHeir(want map[string]spec.Plugin, sp spec.Plugin) string {
	for _, id := range sortedIDs(want) {
		if o := want[id]; id != sp.ID && o.Exec != nil && shareSocket(o, sp) {
			return id
		}
	}
	return ""
}

// passOn hands runner r's process to plugin heir, which runs the process of r's socket now
// (handOver), saying why r no longer does; if it cannot, the process is stopped as the socket's
// unless it has mounts, and left running otherwise.
func (a *Agent) passOn(ctx context.Context, r *runner, heir, why string) {
	p := r.proc
	if err := a.handOver(r.spec.ID, heir, p); err != nil {
		a.log.Error("handing a plugin's process to the plugin on its socket", "plugin", r.spec.ID, "to", heir, "pid", p.pid, "err", err)
		if !a.stopIfUnmounted(r, heir) {
			a.leaveRunning(r.spec.ID, p)
		}
		return
	}
	msg := fmt.Sprintf("plugin %q %s: its process (pid %d), which serves plugin %q on the same socket, is handed to %q, whose runner supervises it from now on",
		r.spec.ID, why, p.pid, heir, heir)
	a.log.Info(msg, "plugin", heir, "pid", p.pid, "from", r.spec.ID)
	a.e.PluginEvent(ctx, heir, "plugin-handover", msg)
}

// handOver records process p, the deregistered plugin from's, as plugin to's: its pid file and
// its log (the file p writes to, under to's name; to's own earlier log becomes the rotated one).
// The pid file is written first: from then on to's runner adopts p.
func (a *Agent) handOver(from, to string, p *process) error {
	if err := writePidFile(a.runDir, to, p); err != nil {
		return err
	}
	removePidFile(a.runDir, from, p.pid)
	// Its environment is from's: the values kept of it go with the process (ExecEnvHandedOver).
	if err := a.e.ExecEnvHandedOver(context.Background(), from, to); err != nil {
		a.log.Warn("keeping the values of the handed process's exec env as secrets of the plugin it runs as now", "plugin", to, "from", from, "err", err)
	}
	src, dst := filepath.Join(a.logDir, from+".log"), filepath.Join(a.logDir, to+".log")
	if _, err := os.Lstat(dst); err == nil {
		_ = os.Rename(dst, dst+".1")
	}
	if err := os.Rename(src, dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.log.Warn("moving the handed process's log", "plugin", to, "from", src, "err", err)
	}
	return nil
}

// oneProcessPerSocket returns specs with one exec block per socket: the plugin IDs registered
// on one socket are one process (docs/architecture.md, Lock order), and two processes started
// for it would both bind it, one of them left serving a socket file nobody reaches, or each
// taking the other's socket at its restart. The first ID in sorted order with an exec block
// runs the process; the others on its sockets, and the IDs without one on them, are probed
// only, their supervision recorded by the owner's runner (Agent.mates). When
// their exec blocks differ, which command runs is the agent's choice, not the user's: a
// warning names both IDs, once per pair.
func (a *Agent) oneProcessPerSocket(specs []spec.Plugin) []spec.Plugin {
	out := slices.Clone(specs)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	var runs []spec.Plugin // the exec plugins kept, each running a process
	mates := map[string][]string{}
	defer func() {
		a.mu.Lock()
		a.mates = mates
		a.mu.Unlock()
	}()
	for i, sp := range out {
		if sp.Exec == nil {
			continue
		}
		j := slices.IndexFunc(runs, func(o spec.Plugin) bool { return shareSocket(o, sp) })
		if j < 0 {
			runs = append(runs, sp)
			continue
		}
		owner := runs[j]
		out[i].Exec = nil
		mates[owner.ID] = append(mates[owner.ID], sp.ID)
		key := owner.ID + "\x00" + sp.ID
		a.mu.Lock()
		warned := a.mateWarned[key]
		a.mateWarned[key] = true
		a.mu.Unlock()
		if warned {
			continue
		}
		if reflect.DeepEqual(owner.Exec, sp.Exec) {
			a.log.Info("plugin declared on the socket of another: one process serves both, started as the other's", "plugin", sp.ID, "served_by", owner.ID)
		} else {
			a.log.Warn(fmt.Sprintf("plugins %q and %q are declared on one socket with different exec blocks: one process serves a socket, so only %q's command runs; "+
				"give them one exec block, or give each its own socket", owner.ID, sp.ID, owner.ID), "plugin", sp.ID, "served_by", owner.ID)
		}
	}
	// An ID registered without an exec block on the socket of one that runs a process is
	// served by that process too: its supervision is recorded with the owner's, as a declared
	// mate's is (before, it had no record, and plugin status said "Supervised: no" of a plugin
	// whose process the agent runs: TestPluginStatusSaysTheAgentRunsTheProcessOfAnIDWithoutAnExecBlockOnItsSocket).
	for _, sp := range specs {
		if sp.Exec != nil {
			continue
		}
		if j := slices.IndexFunc(runs, func(o spec.Plugin) bool { return shareSocket(o, sp) }); j >= 0 {
			mates[runs[j].ID] = append(mates[runs[j].ID], sp.ID)
		}
	}
	return out
}

// shareSocket reports whether two plugins have a socket in common, however spelled.
func shareSocket(a, b spec.Plugin) bool {
	for _, x := range execSockets(a) {
		for _, y := range execSockets(b) {
			if engine.OneSocket(x, y) {
				return true
			}
		}
	}
	return false
}

func sortedIDs(m map[string]spec.Plugin) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// housekeeping runs the restore at start, once every plugin has had its chance to become
// healthy, then reconcile on its timer; claim GC runs on its own timer from the start, and
// plugins registered or deregistered while the agent runs are picked up.
func (a *Agent) housekeeping(ctx context.Context, wg *sync.WaitGroup) {
	a.mu.Lock()
	var settled []<-chan struct{}
	for _, r := range a.runners {
		settled = append(settled, r.settled)
	}
	a.mu.Unlock()
	a.waitFor("the plugins' first probes (each healthy, or its health_timeout passed), then the start-up reconcile")
	ready := make(chan struct{})
	crash.Go(func() {
		for _, ch := range settled {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
		close(ready)
	})

	syncT := time.NewTicker(a.s.ProbeInterval)
	gcT := time.NewTicker(a.s.GCInterval)
	recT := time.NewTicker(a.s.ReconcileInterval)
	defer syncT.Stop()
	defer gcT.Stop()
	defer recT.Stop()
	rd := newRedrive(a.s)
	defer rd.stop()
	started := false  // the start-up reconcile ran; the timer's passes wait for it
	notReady := false // started, and no pass looked at everything yet
	for {
		select {
		case <-ctx.Done():
			return
		case <-ready:
			ready = nil
			started = true
			// Ready once a start-up pass looked at everything: one that failed before it looked
			// (the mount table unreadable for a moment after a reboot) restored nothing, and
			// units ordered after the agent started without their volumes; the passes are
			// re-driven until one does (TestAgentIsNotReadyAfterAStartupPassThatLookedAtNothing).
			a.waitFor("the start-up reconcile")
			notReady = !a.reconcile(ctx, "start")
			if !notReady {
				a.markReady(ctx)
			} else if ctx.Err() == nil && len(a.unusable) == 0 {
				a.waitForWholePass()
				a.log.Warn("agent not ready: the start-up reconcile did not look at everything (its error above); passes are re-driven until one does")
			}
			recT.Reset(a.s.ReconcileInterval)
		case <-syncT.C:
			a.sync(ctx, wg)
		case <-gcT.C:
			a.gc(ctx)
		case <-recT.C:
			if started {
				a.passReady(ctx, &notReady, a.reconcile(ctx, "timer"))
			}
		case <-a.kick:
			if started {
				a.passReady(ctx, &notReady, a.reconcile(ctx, "plugin_restart"))
			}
		case <-rd.c:
			rd.t, rd.c = nil, nil
			a.passReady(ctx, &notReady, a.reconcile(ctx, "redrive"))
		}
		if started && ctx.Err() == nil {
			a.scheduleRedrive(ctx, rd, notReady)
		}
	}
}

// markReady says the agent ready: plugins probed and a start-up pass that looked at everything
// done. Not on a state it cannot use: it stops.
func (a *Agent) markReady(ctx context.Context) {
	if ctx.Err() != nil || len(a.unusable) > 0 {
		return
	}
	a.ready.Store(true)
	a.obs.Ready()
	a.tell("READY=1")
	a.log.Info("agent ready: plugins probed and the start-up reconcile done")
}

// passReady marks the agent ready after a pass that looked at everything (whole) while it was
// not ready yet (*notReady).
func (a *Agent) passReady(ctx context.Context, notReady *bool, whole bool) {
	if ctx.Err() != nil {
		// A pass the stop cut short: the agent waits for nothing but its stop, which Run said
		// (TestStoppingAgentStillSaysItIsStoppingOnceAPassInFlightEnds).
		return
	}
	switch {
	case *notReady && whole:
		*notReady = false
		a.markReady(ctx)
	case *notReady:
		a.waitForWholePass()
	}
}

// redrive schedules the extra reconcile passes that re-drive claims a pass left held: degraded
// (their restore failed) or left for reconcile. The waits grow by the agent's restart backoff,
// capped at the reconcile interval (the timer's passes run anyway), and start over once no
// claim is left held, so a plugin that is briefly sick gets its claims back within seconds and
// one that stays sick is not hammered.
type redrive struct {
	b    *backoff.Backoff
	t    *time.Timer
	c    <-chan time.Time // nil while nothing is scheduled
	held int              // claims held when the last pass was scheduled
}

func newRedrive(s Settings) *redrive {
	return &redrive{b: backoff.New(s.BackoffMin, min(s.BackoffMax, s.ReconcileInterval))}
}

func (r *redrive) stop() {
	if r.t != nil {
		r.t.Stop()
	}
	r.t, r.c = nil, nil
}

// scheduleRedrive counts the claims held after what the loop just did (a pass, or a command
// that left a claim for reconcile meanwhile) and, while there are any, schedules the next
// re-drive pass after the backoff's next wait; with none, it resets the backoff. A pass already
// scheduled is left as it is.
func (a *Agent) scheduleRedrive(ctx context.Context, r *redrive, notReady bool) {
	if r.c != nil {
		return
	}
	if notReady {
		// No pass looked at everything yet: the next is re-driven as a held claim's is.
		wait := r.b.Next()
		a.log.Debug("reconcile: a pass re-driven until one looks at everything", "retry_in", wait)
		r.t = time.NewTimer(wait)
		r.c = r.t.C
		return
	}
	claims, err := a.e.Claims(ctx)
	if err != nil {
		return // the next pass tries again
	}
	held, degraded := 0, 0
	for _, c := range claims {
		if c.Releasing || !(c.Degraded || c.NeedsReconcile) {
			continue
		}
		held++
		if c.Degraded {
			degraded++
		}
	}
	if held == 0 {
		r.b.Reset()
		r.stop()
		r.held = 0
		return
	}
	wait := r.b.Next()
	level := slog.LevelDebug
	if held != r.held {
		level = slog.LevelInfo // logged when the count changes, not on every re-drive
	}
	r.held = held
	a.log.Log(ctx, level, "reconcile: claims held for a re-drive", "claims", held, "degraded", degraded, "retry_in", wait)
	r.t = time.NewTimer(wait)
	r.c = r.t.C
}

// keepLogs keeps the supervised plugins' logs under maxLogSize while they run, checking every
// logCheckInterval until ctx ends. It has a loop of its own: a reconcile pass waiting on a
// plugin that does not answer holds housekeeping's loop for minutes.
func (a *Agent) keepLogs(ctx context.Context) {
	every(ctx, logCheckInterval, func() bool { a.trimLogs(); logChecks.Add(1); return false })
}

// logChecks counts keepLogs's checks, for a test: an idle agent's ticks, counted rather than
// waited for on the wall clock, which on a loaded machine may hold none.
var logChecks atomic.Int64

// reapInterval is how often the agent reaps orphans with no SIGCHLD to say one exited: a scan
// reads every process's stat (reapOrphans), thousands on a busy host, so an idle agent does
// not scan every second; this bound only covers a signal missed.
const reapInterval = 30 * time.Second

// reapOnSIGCHLD reaps what was re-parented to the agent and exited (reapOrphans) at each
// SIGCHLD, and every reapInterval, until ctx ends. A SIGCHLD during a scan is kept (the
// channel holds one) and brings another scan: signals that coalesce lose no exit.
func reapOnSIGCHLD(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	everyOr(ctx, reapInterval, ch, func() bool { reapOrphans(); return false })
}

// every calls fn every d until fn returns true or ctx ends.
func every(ctx context.Context, d time.Duration, fn func() (done bool)) { everyOr(ctx, d, nil, fn) }

// everyOr is every, also calling fn whenever wake delivers (a nil wake never does).
func everyOr(ctx context.Context, d time.Duration, wake <-chan os.Signal, fn func() (done bool)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		if fn() {
			return
		}
	}
}

// leaveRunning records p, the process of plugin id's runner, as left running under mounts
// with no runner to supervise it (leftRunning); nil records nothing.
func (a *Agent) leaveRunning(id string, p *process) {
	if p == nil {
		return
	}
	a.mu.Lock()
	a.leftRunning[id] = p
	a.mu.Unlock()
}

// trimLogs rotates the supervised plugins' logs that grew past maxLogSize (trimLog), and the
// file a running plugin writes to when its log's path no longer names it (orphanedLog); and
// the same of the processes left running with no runner (leftRunning), while they run.
func (a *Agent) trimLogs() {
	a.mu.Lock()
	pids := map[string]int{}
	for id, r := range a.runners {
		if r.supervised() {
			r.smu.Lock()
			pids[id] = r.sPid
			r.smu.Unlock()
		}
	}
	for id, p := range a.leftRunning {
		if _, supervised := pids[id]; supervised || !p.alive() {
			// Supervised again (adopted through its pid file), or gone.
			delete(a.leftRunning, id)
			continue
		}
		pids[id] = p.pid
	}
	a.mu.Unlock()
	if len(pids) > 0 {
		// Removed under the running agent (rm -rf to free space), the logs directory left no
		// place for a rotation: the plugins' removed logs, written through their descriptors,
		// grew unbounded, out of sight, and the failure was warned of every check
		// (TestPluginLogWhoseDirectoryWasRemovedStaysBoundedAndIsNotAWarningEveryCheck). Made
		// again, as the agent's start makes it.
		if _, err := os.Lstat(a.logDir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(a.logDir, 0o700); err == nil {
				a.log.Warn("the plugins' logs directory was removed while the agent ran: made again (a running plugin writes to its removed log, trimmed through its descriptor, until it starts again)", "dir", a.logDir)
			}
		}
	}
	for id, pid := range pids {
		path := filepath.Join(a.logDir, id+".log")
		err := trimLog(path)
		if pid > 0 {
			err = errors.Join(err, a.trimOrphanedLog(id, pid, path))
		}
		a.rotationFailed(id, err)
	}
}

// rotationFailed warns of plugin id's log rotation failure err when it differs from the last
// one, and says once when rotating works again (err nil).
func (a *Agent) rotationFailed(id string, err error) {
	was := a.rotateFailed[id]
	switch {
	case err == nil && was != "":
		delete(a.rotateFailed, id)
		a.log.Info("rotating the plugin's log works again", "plugin", id)
	case err != nil && err.Error() != was:
		a.rotateFailed[id] = err.Error()
		a.log.Warn("rotating a plugin's log", "plugin", id, "err", err)
	}
}

// trimOrphanedLog keeps under maxLogSize the file a running plugin writes its output to when
// its log's path was replaced while no agent ran (orphanedLog): left, it grew for as long as
// the plugin ran, out of sight, on the file system the store is on. What is at the path now is
// not followed; it is named in a warning once.
func (a *Agent) trimOrphanedLog(id string, pid int, path string) error {
	f, err := orphanedLog(pid, path)
	if f == nil && err == nil {
		return nil
	}
	if f != nil {
		defer f.Close()
		err = trimOpen(f, path+".1")
	}
	a.mu.Lock()
	warned := a.logWarned[id]
	a.logWarned[id] = true
	a.mu.Unlock()
	if !warned {
		msg, what := "the plugin writes its output to a log file removed from its path: trimming it through the plugin's descriptor; its next start makes a new log", "nothing"
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode().IsRegular() {
			what = "another regular file"
			msg = "the plugin writes its output to a log file replaced at its path by another file: trimming both; its next start appends to the new one"
		} else if lerr == nil {
			what = pathtrust.FileKind(fi.Mode())
			msg = "the plugin writes its output to a log file no longer at its path: trimming it through the plugin's descriptor, not following what is at the path; " +
				"remove that: the plugin's next start refuses a log path that is not a regular file as the agent makes them"
		}
		a.log.Warn(msg, "plugin", id, "pid", pid, "log", path, "now_at_path", what)
	}
	return err
}

// tell sends state to the service manager; a failure is logged, never fatal: the agent works
// without one.
func (a *Agent) tell(state string) {
	if err := a.notify(state); err != nil {
		a.log.Warn("telling the service manager "+state, "err", err)
	}
}

// kickReconcile asks for a reconcile pass soon, without waiting for it.
func (a *Agent) kickReconcile() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// reconcile runs one reconcile pass and logs what it did and what is left (logProblems).
func (a *Agent) reconcile(ctx context.Context, why string) (whole bool) {
	rep, err := a.e.Reconcile(ctx)
	for _, act := range rep.Actions {
		a.log.Info("reconcile: "+act.Message, "kind", act.Kind, "volume", act.VolumeID, "alloc", act.Alloc, "trigger", why)
	}
	if ctx.Err() != nil {
		return false // what a pass cut short by shutdown left undone is the next agent's
	}
	a.obs.Reconciled(why, rep, err)
	if rep.Whole() {
		a.logProblems(why, rep.Problems)
	} else {
		// A pass that failed before it looked, or was cut short: what it found is logged, and
		// nothing it did not look at is said resolved.
		a.logFoundProblems(why, rep.Problems)
	}
	if engine.StateUnusable(err) {
		// Pass after pass would read what it cannot, or an old file (a backup restored over
		// it: what a restart opens), while a command reads the new one.
		select {
		case a.unusable <- err:
		default:
		}
		return false
	}
	a.passFailure = a.logPassFailure("reconcile", a.passFailure, rep, err)
	a.lastPassErr = ""
	if err != nil && !rep.Whole() {
		a.lastPassErr = a.problemScrubber(true)(err.Error())
	}
	return rep.Whole()
}

// waitFor says what the agent waits for while not ready (Status.WaitingFor).
func (a *Agent) waitFor(what string) { a.waitingFor.Store(&what) }

// waitForWholePass says the agent waits for a reconcile pass that looks at everything, the
// last pass having failed before it did.
func (a *Agent) waitForWholePass() {
	what := "a reconcile pass that looks at everything (passes are re-driven until one does)"
	if a.lastPassErr != "" {
		what += "; the last failed: " + a.lastPassErr
	}
	a.waitFor(what)
}

// logPassFailure logs err, the failure of a pass (reconcile, claim GC) that found no problem of
// its own (rep's: it failed before it looked), once while it fails so, and once that it works
// again; it returns what is logged now (last, its words as FailureWords masks them). Before,
// the same warning was logged at every pass, 1,440 a day at the defaults
// (TestReconcilePassThatCannotLookIsNotAWarningEveryPass).
func (a *Agent) logPassFailure(what, last string, rep engine.ReconcileReport, err error) string {
	if err == nil || len(rep.Problems) > 0 {
		if last != "" && rep.Whole() {
			a.log.Info(what + ": works again")
			return ""
		}
		return last
	}
	words := engine.FailureWords(err.Error())
	if words != last {
		a.log.Warn(what, "err", err)
	}
	return words
}

// logProblems logs each problem of a reconcile pass once, not on every pass, and again only
// after it was gone. A problem is logged resolved when nothing about its subject is wrong any
// more: a claim's problem is reworded as the step that fails changes (one commit, then
// another), and a new wording is no resolution (TestRewordedProblemIsNotLoggedResolved).
func (a *Agent) logProblems(why string, problems []engine.ReconcileAction) {
	a.problems = a.logProblemsOnce("reconcile", a.problems, problems, true, "trigger", why)
}

// logFoundProblems is logProblems of a pass that did not look at everything (engine's
// ReconcileReport.Whole): each problem found is logged once, and those logged before stay
// logged, none said resolved (TestAPassThatLookedAtNothingResolvesNoProblem).
func (a *Agent) logFoundProblems(why string, problems []engine.ReconcileAction) {
	now := a.logProblemsOnce("reconcile", a.problems, problems, false, "trigger", why)
	maps.Copy(now, a.problems)
	a.problems = now
}

// loggedProblem is a problem logProblemsOnce logged: its subject (problemSubject) and its
// message as last seen.
type loggedProblem struct{ subject, message string }

// logProblemsOnce logs each of problems that logged does not hold yet, as what (its words and
// attrs after the problem's), and, with resolve, a problem of logged gone, its subject without
// one now, as resolved; it returns what is logged now. A problem is keyed by its subject and its words
// with IDs, times and durations masked (engine.FailureWords, as the event log tells a failure
// repeated): a plugin naming each request by a new ID, or volctl's own "took 1m7s", made the
// same stuck claim a new warning every pass, every minute
// (TestClaimGCLogsAStuckClaimWhosePluginNamesEachRequestOnce).
func (a *Agent) logProblemsOnce(what string, logged map[string]loggedProblem, problems []engine.ReconcileAction, resolve bool, attrs ...any) map[string]loggedProblem {
	now := map[string]loggedProblem{}
	wrong := map[string]bool{} // subjects with a problem now
	scrub := a.problemScrubber(len(problems) > 0)
	for _, p := range problems {
		subject := problemSubject(p)
		key := subject + "\x00" + engine.FailureWords(p.Message)
		now[key] = loggedProblem{subject: subject, message: scrub(p.Message)}
		wrong[subject] = true
		if _, seen := logged[key]; !seen {
			a.log.Warn(what+": "+p.Message, append([]any{"kind", p.Kind, "volume", p.VolumeID, "alloc", p.Alloc}, attrs...)...)
		}
	}
	for key, was := range logged {
		if _, still := now[key]; resolve && !still && !wrong[was.subject] {
			a.log.Info(what + ": resolved: " + was.message)
		}
	}
	return now
}

// problemScrubber is what logProblemsOnce keeps a problem's message through, for the
// "resolved" line it logs passes later: scrubbed of the state's secrets now, as the warning was
// when written. Kept raw, a secret the plugin echoed into it (a snapshot's ID) was logged
// whole once another process let it go from the state, which the log's redactor then no
// longer knew (TestResolvedProblemLineShowsNoSecretAnotherProcessLetGo). any: problems to keep
// (none: nothing read). An agent without an engine (a test's) keeps the words as they are.
func (a *Agent) problemScrubber(any bool) func(string) string {
	if !any || a.e == nil {
		return func(msg string) string { return msg }
	}
	redact, err := a.e.Redactor(context.Background())
	if err != nil {
		return func(string) string {
			return fmt.Sprintf("a problem (its words withheld: reading the state's secrets to scrub them failed: %v)", err)
		}
	}
	return redact
}

// problemSubject is what a reconcile problem is about: what the engine names (Subject: a
// snapshot's delete), else its kind, volume and alloc, or, for one that names neither (a mount
// nothing accounts for), its message's words.
func problemSubject(p engine.ReconcileAction) string {
	if p.Subject != "" {
		return "\x00" + p.Subject // what the engine says it is about (a snapshot's delete)
	}
	if p.VolumeID == "" && p.Alloc == "" {
		// Its words, IDs, times and durations masked, as the key's are: raw, a plugin naming
		// each request by a new ID made every pass's a new subject, logged again and the last
		// logged resolved (TestStuckSnapshotDeleteWhosePluginNamesEachRequestIsLoggedOnce).
		return "\x00" + engine.FailureWords(p.Message)
	}
	return p.Kind + "\x00" + p.VolumeID + "\x00" + p.Alloc
}

// gc releases past claims: claims whose release was asked for but did not finish, and claims
// of stopped groups (Engine.ReleasePast, which checks each claim again by its ID under its
// volume lock, so a claim made again meanwhile is never released). It contacts plugins only
// when there is something to release, which keeps it cheap enough to run more often than a
// full reconcile.
func (a *Agent) gc(ctx context.Context) {
	rep, err := a.e.ReleasePast(ctx)
	// What a pass cut short by the stop did is logged all the same, as reconcile's is: a claim
	// it released before the stop was never said freed by the GC
	// (TestClaimGCPassCutShortByTheStopStillLogsWhatItReleased).
	for _, act := range rep.Actions {
		a.log.Info("claim GC: "+act.Message, "volume", act.VolumeID, "alloc", act.Alloc)
	}
	if ctx.Err() != nil {
		return
	}
	// Each once until it goes, as reconcile's: a claim stuck releasing was a warning every
	// pass, as often as reconcile's, 1,440 a day (TestClaimGCLogsAStuckClaimsProblemOnce).
	// Resolved only by a pass that tried every past claim: one that failed before it listed
	// them said every open problem resolved (TestClaimGCPassThatLookedAtNothingResolvesNoProblem).
	now := a.logProblemsOnce("claim GC", a.gcProblems, rep.Problems, rep.Whole())
	if !rep.Whole() {
		maps.Copy(now, a.gcProblems)
	}
	a.gcProblems = now
	a.gcFailure = a.logPassFailure("claim GC", a.gcFailure, rep, err)
}

// stopPlugins stops, after every loop has ended, the supervised plugins without mounts. A
// plugin with mounts is left running: stopping a node plugin under mounted volumes is never
// right, and the next agent adopts it.
func (a *Agent) stopPlugins() {
	a.mu.Lock()
	runners := make([]*runner, 0, len(a.runners))
	for _, r := range a.runners {
		runners = append(runners, r)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range runners {
		crash.GoGroup(&wg, func() { a.stopIfUnmounted(r, r.spec.ID) })
	}
	wg.Wait()
}

// stopIfUnmounted stops a finished runner's process unless its plugin has mounts, counted as
// plugin countAs's (the runner's own ID, or for a deregistered one, an ID registered on its
// socket: the engine counts through every ID on a socket, and locks the socket's publish lock,
// only for an ID it knows). It reports whether the process is stopped, or there is none.
func (a *Agent) stopIfUnmounted(r *runner, countAs string) bool {
	p := r.proc
	if p == nil {
		// Nothing runs: its start failed, or its process exited, and the record says the
		// agent starts it again, which this agent no longer does.
		if m := r.recorded.mode; m == engine.SupervisionStartFailed || m == engine.SupervisionExited {
			why := "its last start failed (" + r.recorded.note + ")"
			if m == engine.SupervisionExited {
				why = fmt.Sprintf("its process (pid %d) had exited (%s)", r.recorded.pid, r.recorded.note)
			}
			a.recordStop(context.Background(), r, engine.SupervisionStopped, "the plugin was not running: "+why)
		}
		if len(r.leftUnder) > 0 {
			// What its earlier processes left under mounts, once the mounts are gone, as with
			// a process running.
			ctx, cancel := context.WithTimeout(context.Background(), a.s.StopTimeout)
			defer cancel()
			m, release, err := a.e.HoldPluginMountsServing(ctx, countAs, r.spec, nil)
			defer release()
			if err == nil && !m.Any() {
				a.stopLeftBy(r, nil)
			} else {
				a.log.Warn("leaving running what the plugin's earlier processes left outside their group: it may serve the plugin's mounts",
					"plugin", r.spec.ID, "mounts", m.Mounts, "in_doubt", m.InDoubt, "err", err)
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.s.StopTimeout)
	defer cancel()
	// Counted and stopped under the plugin's publish lock: a claim admitted meanwhile, by any
	// process, waits to publish until the plugin is stopped, and finds it gone. Waited for
	// while ctx lasts, since nothing makes this stop again: a publish or release under way, or
	// another process's brief hold of the lock, left the process running for good. ctx lasts
	// stop_timeout, which bounds the stop with the wait for the process (docs/agent.md): a
	// fixed 30 s held a stop of stop_timeout 1s for 30 s while another process published
	// (TestStopWaitsForAPublishNoLongerThanStopTimeout).
	m, release, err := a.e.HoldPluginMountsServing(ctx, countAs, r.spec, p.served)
	defer release()
	switch {
	case err != nil:
		a.log.Warn("leaving plugin running: could not count its mounts", "plugin", r.spec.ID, "pid", p.pid, "err", err)
		a.recordStop(context.WithoutCancel(ctx), r, engine.SupervisionLeft, fmt.Sprintf("its mounts could not be counted (%v)", err))
		return false
	case m.Any():
		why := fmt.Sprintf("it has %d mounts and %d in doubt", m.Mounts, m.InDoubt)
		if m.Publishing {
			why = fmt.Sprintf("a volume was still being published or released through it after %s (stop_timeout)", a.s.StopTimeout)
		}
		a.log.Warn("leaving plugin running: "+why+", and stopping a plugin under mounted volumes, or one publishing, is never right",
			"plugin", r.spec.ID, "pid", p.pid, "mounts", m.Mounts, "in_doubt", m.InDoubt, "publishing", m.Publishing, "counted_as", countAs)
		a.recordStop(context.WithoutCancel(ctx), r, engine.SupervisionLeft, why) // ctx may have run out waiting
		return false
	}
	if a.afterCount != nil {
		a.afterCount(r.spec.ID)
	}
	a.log.Info("stopping plugin", "plugin", r.spec.ID, "pid", p.pid)
	if err := p.stop(a.s.StopTimeout); err != nil {
		a.log.Warn("stopping plugin", "plugin", r.spec.ID, "pid", p.pid, "err", err)
		a.recordStop(context.WithoutCancel(ctx), r, engine.SupervisionLeft, fmt.Sprintf("stopping it failed: %v", err))
		return false
	}
	a.stopLeftBy(r, p)
	removePidFile(a.runDir, r.spec.ID, p.pid)
	// ctx bounded the wait for the publish lock; the stop of a plugin that ignored SIGTERM may
	// have outlasted it. The record is the stop's own (before, written on an expired ctx, it
	// was lost: plugin status said a dead agent ran the plugin,
	// TestCleanStopOfAPluginKilledAfterStopTimeoutIsRecorded).
	rctx := context.WithoutCancel(ctx)
	a.recordStop(rctx, r, engine.SupervisionStopped, "")
	a.envRuns(rctx, r.spec.ID, nil)
	a.e.PluginEvent(rctx, r.spec.ID, "plugin-stop", fmt.Sprintf("plugin %q stopped by the agent (pid %d)", r.spec.ID, p.pid))
	return true
}

// letGoOfGoneEnvs lets go, at the agent's start, of the values kept of the exec envs of plugins
// deregistered (Engine.ExecEnvRuns) that no agent-started process runs with: those with no pid
// file under run/ (an agent writes it before the plugin's command runs, and removes it once it
// stopped it). A deregistration while no agent ran, its process stopped with the last agent,
// kept them for good before this. A plugin whose pid file stays (left running under mounts)
// keeps them.
func (a *Agent) letGoOfGoneEnvs(ctx context.Context) {
	ids, err := a.e.ExecEnvKeptOfGone(ctx)
	if err != nil {
		a.log.Warn("reading the values kept of deregistered plugins' exec envs (they stay secrets, scrubbed)", "err", err)
		return
	}
	for _, id := range ids {
		if _, err := os.Lstat(pidFilePath(a.runDir, id)); errors.Is(err, fs.ErrNotExist) {
			a.envRuns(ctx, id, nil)
		}
	}
}

// envRuns records that the one process of plugin id that may run now was started with env
// (nil: none runs), letting go of the values of its earlier exec envs kept while a process
// started with them might run (Engine.ExecEnvRuns). A failure keeps them, secrets still, until
// the next start or stop says so again.
func (a *Agent) envRuns(ctx context.Context, id string, env spec.Secrets) {
	if err := a.e.ExecEnvRuns(ctx, id, env); err != nil && ctx.Err() == nil {
		a.log.Warn("letting go of the values of the plugin's earlier exec envs, which no process of it runs with now (they stay secrets, scrubbed, until its next start or stop)",
			"plugin", id, "err", err)
	}
}

// recordStop records, at a stop of runner r's process (the agent's own, a re-declaration's, a
// deregistration's), that the agent stopped it or left it running, and why: what plugin status
// shows until an agent runs the plugin again. A runner that recorded nothing (a plugin without
// an exec block) records nothing; a plugin deregistered has no record to keep.
func (a *Agent) recordStop(ctx context.Context, r *runner, mode, note string) {
	if r.recorded.mode == "" {
		return
	}
	s := supervision{mode: mode, note: note}
	if r.proc != nil {
		s.pid = r.proc.pid
	}
	_ = a.recordSupervision(ctx, r.spec.ID, s, true)
	for _, mate := range slices.Sorted(maps.Keys(r.mates)) {
		_ = a.recordSupervision(ctx, mate, mateSupervision(r.spec.ID, s), true)
	}
}

// stopLeftBy stops, once plugin id's process p is stopped or has exited, what it left running
// outside its process group (stopLeft: a daemon in a session of its own not recorded yet, a
// child it handed its socket to), at a clean stop and before every restart alike, each only
// while the plugin has no mounts (what it left may serve them): left, such a process keeps the
// plugin's socket, and the next start takes it for a plugin no agent started.
// What the runner's earlier processes left under mounts when they exited (leftUnder) is
// stopped with it: before, found by an instance only the exited process had, it was looked for
// no more, and ran on after the agent's clean stop, recorded nowhere
// (TestCleanStopStopsWhatACrashedInstanceLeft).
func (a *Agent) stopLeftBy(r *runner, p *process) {
	instances := slices.Clone(r.leftUnder)
	if p != nil {
		instances = append(instances, p.instance)
	}
	for _, instance := range instances {
		if left := stopLeft(instance, a.s.StopTimeout); len(left) > 0 {
			a.log.Info("stopped what the plugin left outside its process group", "plugin", r.spec.ID, "pids", left)
		}
	}
	r.leftUnder = nil
	r.saveLeftUnder()
}
