package agent

import (
	"sort"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// Observer is told what the agent does, for its metrics (internal/agent/metrics implements it;
// the agent package imports no metrics library). Its methods must be quick and safe for
// concurrent use: runners call them from their own goroutines.
type Observer interface {
	// PluginProbed reports one probe of a plugin: healthy and ready as recorded, and the
	// probe's latency (zero when the plugin could not be reached).
	PluginProbed(plugin string, healthy, ready bool, latency time.Duration)
	// PluginGone reports that a plugin is no longer supervised (deregistered).
	PluginGone(plugin string)
	// PluginRestarted reports a supervised plugin the agent is restarting, and why: "exited"
	// or "unhealthy".
	PluginRestarted(plugin, reason string)
	// Reconciled reports one reconcile pass: what triggered it ("start", "timer", "plugin
	// restarted"), its report and its error.
	Reconciled(trigger string, rep engine.ReconcileReport, err error)
	// Ready reports that the agent is ready: its plugins were healthy (or had their chance)
	// and the start-up reconcile (the restore) has run.
	Ready()
	// Stopping reports that the agent began to stop (STOPPING=1): it is not ready from then on.
	Stopping()
}

type nopObserver struct{}

func (nopObserver) PluginProbed(string, bool, bool, time.Duration)   {}
func (nopObserver) PluginGone(string)                                {}
func (nopObserver) PluginRestarted(string, string)                   {}
func (nopObserver) Reconciled(string, engine.ReconcileReport, error) {}
func (nopObserver) Ready()                                           {}
func (nopObserver) Stopping()                                        {}

// Status is what the agent supervises, as /healthz beside the metrics answers it (docs/json.md).
type Status struct {
	// Ready is true once the plugins were healthy (or had their chance) and the start-up
	// reconcile has run; the agent then told the service manager (sd_notify READY=1).
	Ready bool `json:"ready"`
	// WaitingFor says, while the agent is not ready, what it waits for: its plugins' first
	// probes and the start-up reconcile, a reconcile pass that looks at everything (with the
	// last pass's error), or its stop. Before, a 503 listed every plugin healthy and said no
	// more (TestNotReadyStatusSaysWhatKeepsTheAgentNotReady).
	WaitingFor string         `json:"waiting_for,omitempty"`
	Plugins    []PluginStatus `json:"plugins"`
}

// PluginStatus is one plugin the agent probes, and runs if it has an exec block.
type PluginStatus struct {
	ID         string `json:"id"`
	Supervised bool   `json:"supervised"` // it has an exec block: the agent runs it
	Foreign    bool   `json:"foreign"`    // its socket was live with a process no volctl agent started: probed only
	Pid        int    `json:"pid,omitempty"`
	// Health is the last probe's verdict: "healthy", "not ready", "unhealthy", or "" before the
	// first probe.
	Health   string `json:"health"`
	Restarts int    `json:"restarts"` // restarts by this agent, after an exit or past the health timeout
}

// Ready reports whether the agent is ready (Status.Ready).
func (a *Agent) Ready() bool { return a.ready.Load() }

// Status reports what the agent supervises, plugins by ID.
func (a *Agent) Status() Status {
	a.mu.Lock()
	runners := make([]*runner, 0, len(a.runners))
	for _, r := range a.runners {
		runners = append(runners, r)
	}
	a.mu.Unlock()
	st := Status{Ready: a.Ready(), Plugins: make([]PluginStatus, 0, len(runners))}
	if !st.Ready {
		if w := a.waitingFor.Load(); w != nil {
			st.WaitingFor = *w
		}
	}
	for _, r := range runners {
		st.Plugins = append(st.Plugins, r.status())
	}
	sort.Slice(st.Plugins, func(i, j int) bool { return st.Plugins[i].ID < st.Plugins[j].ID })
	return st
}

// status is the runner's part of Status.
func (r *runner) status() PluginStatus {
	r.smu.Lock()
	defer r.smu.Unlock()
	return PluginStatus{ID: r.spec.ID, Supervised: r.supervised(), Foreign: r.sForeign, Pid: r.sPid, Health: r.sHealth, Restarts: r.sRestarts}
}

// publish copies what Status shows from the runner's own fields, which only its loop touches.
func (r *runner) publish() {
	r.smu.Lock()
	defer r.smu.Unlock()
	r.sForeign, r.sHealth, r.sPid = r.foreign, r.state, 0
	if r.proc != nil {
		r.sPid = r.proc.pid
	}
}
