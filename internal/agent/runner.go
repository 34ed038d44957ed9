package agent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volctl/volctl/internal/backoff"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// runner probes one registered plugin on a loop and, for a plugin with an exec block, keeps its
// process running: started (or adopted) at first, restarted with backoff when it exits or stays
// unhealthy past the health timeout.
type runner struct {
	a    *Agent
	spec spec.Plugin
	// declared is execDigestOf(spec), "" without an exec block: a runner's spec never changes
	// (sync makes a new runner for a new declaration), so it is hashed once, not at each probe.
	declared string

	cancel context.CancelFunc
	done   chan struct{} // closed when loop returns; proc is then the caller's to read

	settled    chan struct{} // closed once the plugin was healthy, or had its chance
	settleOnce sync.Once
	// handedOn: sync replaced the runner with another for the same plugin (its declaration
	// changed), which settles it once it settles itself (Agent.sync), not its end. Before, a
	// runner replaced before it settled settled as it ended, and the start-up restore ran while
	// the plugin its successor probes was not ready
	// (TestLateFirstRegistrationOfARedeclaredPluginDoesNotSettleTheStartupRestore).
	handedOn atomic.Bool

	proc    *process // the supervised process, when volctl can stop it
	foreign bool     // a live socket not started by a volctl agent: probed, never signalled
	state   string   // last logged health: healthy, not ready, unhealthy
	// foreignPid and foreignNote say what serves a foreign plugin's socket (foreignServer), for
	// its record; recorded is what the runner last recorded of its supervision (noteSupervision).
	foreignPid  int
	foreignNote string
	recorded    supervision
	recordErr   bool // a record failed, logged once until one succeeds
	// mates is what the runner last recorded of the plugins on its socket whose exec block it
	// runs for them (Agent.mates, noteMates), by ID.
	mates map[string]supervision
	// leftUnder are the instances of the plugin's earlier processes that exited under mounts,
	// leaving processes outside their group (which may serve the mounts): stopped with the
	// plugin once it has none (stopLeftBy). Only the loop, and the stop after it, touch it.
	leftUnder []string

	// What Status shows, copied from the fields above by publish under smu: only the loop
	// touches those.
	smu       sync.Mutex
	sForeign  bool
	sPid      int
	sHealth   string
	sRestarts int
}

func newRunner(a *Agent, sp spec.Plugin) *runner {
	r := &runner{a: a, spec: sp, done: make(chan struct{}), settled: make(chan struct{})}
	if sp.Exec != nil {
		r.declared = execDigestOf(sp)
	}
	return r
}

func (r *runner) settle() { r.settleOnce.Do(func() { close(r.settled) }) }

func (r *runner) supervised() bool { return r.spec.Exec != nil }

// loop is the runner's life. It never stops the process itself: on shutdown the agent decides,
// after every loop has ended, which plugins may be stopped.
func (r *runner) loop(ctx context.Context) {
	defer close(r.done)
	defer func() {
		if !r.handedOn.Load() {
			r.settle() // nobody waits on a runner that has ended
		}
	}()
	a, id := r.a, r.spec.ID
	// However its starts go (a command that does not exist never gets to a probe), the plugin
	// has had its chance after the health timeout: the start-up reconcile waits no longer.
	chance := time.AfterFunc(a.s.HealthTimeout, r.settle)
	defer chance.Stop()
	bo := backoff.New(a.s.BackoffMin, a.s.BackoffMax)
	var (
		lastGood  time.Time // the process's start, or its last healthy probe
		restartAt time.Time // when the next start may happen
		restarted bool      // the running process replaced one that failed
		warnedFor bool      // the foreign plugin's unhealthiness was logged
		withheld  holdKind  // the kind of reason a restart was withheld under mounts, as logged this unhealthy spell
		stuck     bool      // a failed stop was logged, this unhealthy spell
		// The same two for a process that runs another exec block than the declared one
		// (replaceOutdated), for as long as it does.
		outdatedWithheld holdKind
		outdatedStuck    bool
	)
	for ctx.Err() == nil {
		if r.supervised() && r.proc == nil && !r.foreign {
			if !a.restartWait(ctx, restartAt.Sub(a.now())) {
				return
			}
			started, err := r.startOrAdopt(ctx)
			if err != nil {
				wait := bo.Next()
				a.log.Error("starting plugin", "plugin", id, "err", err, "retry_in", wait)
				a.e.PluginEvent(ctx, id, "plugin-start", fmt.Sprintf("plugin %q did not start: %v (retrying in %s)", id, err, wait))
				r.noteDown(ctx, engine.SupervisionStartFailed, 0, err.Error())
				r.startFailed()
				restartAt = a.now().Add(wait)
				continue
			}
			restarted = restarted || started
			lastGood = a.now()
			r.publish()
			if r.proc != nil && !r.outdated() {
				// It runs the declared exec block: no process of the plugin runs with an
				// earlier env's values any more (one process per plugin), kept till now.
				a.envRuns(ctx, id, r.spec.Exec.Env)
			}
		}

		r.noteSupervision(ctx)
		healthy, ready, reason := r.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		now := a.now()
		switch {
		case healthy:
			lastGood, warnedFor, withheld, stuck = now, false, holdNone, false
			if ready {
				// A plugin that answers not ready is still starting: the start-up reconcile
				// waits for it, up to the health timeout (chance), as for one that does not
				// answer. Before, any answer let it run, its restores sent to a plugin still
				// starting (TestNotReadyPluginDoesNotSettleTheStartupRestore); one without an
				// exec block (systemd's, starting beside the agent at boot) did so until
				// TestNotReadyPluginWithoutAnExecBlockDoesNotSettleTheStartupRestore.
				r.settle()
			}
			if r.proc != nil && now.Sub(r.proc.started) >= a.s.BackoffMax {
				bo.Reset()
			}
			if restarted {
				restarted = false
				a.kickReconcile() // a restarted node plugin may have lost its mounts
			}
		case !r.supervised():
			// Not reachable yet: another supervisor (systemd at boot) may be starting it, so the
			// start-up reconcile waits for it as for one of the agent's, up to the health timeout
			// (chance); before, it ran at the first probe, the plugin's mounts not restored under
			// a READY=1 (TestUnreachablePluginWithoutAnExecBlockHoldsTheStartupRestoreBack).
		case now.Sub(lastGood) > a.s.HealthTimeout:
			r.settle()
			if r.foreign {
				if !socketsLive(execSockets(r.spec)) {
					a.log.Warn("the plugin found running at start is gone; starting it", "plugin", id)
					r.foreign = false
					continue
				}
				if !warnedFor {
					a.log.Warn("plugin unhealthy, but it was not started by a volctl agent: not restarting it", "plugin", id, "for", now.Sub(lastGood).Round(time.Second))
					warnedFor = true
				}
				break
			}
			if r.proc == nil {
				break
			}
			if missing := missingSockets(execSockets(r.spec)); len(missing) > 0 && r.proc.alive() {
				// The engine's "is the plugin running?" is the wrong question: it runs.
				quoted := make([]string, len(missing))
				for i, m := range missing {
					quoted[i] = spec.QuoteName(m)
				}
				reason = fmt.Sprintf("its process (pid %d) runs but has not made its socket %s", r.proc.pid, strings.Join(quoted, ", "))
			}
			unhealthyFor := fmt.Sprintf("plugin %q unhealthy for %s (health timeout %s): %s", id,
				now.Sub(lastGood).Round(time.Millisecond), a.s.HealthTimeout, reason)
			why, kind, release := r.mountsHeld(ctx)
			if why != "" {
				if withholdNews(withheld, kind) && ctx.Err() == nil {
					msg := fmt.Sprintf("%s: not restarting it: %s, and stopping a plugin under mounts takes them from the allocs using them; "+
						"it is restarted once it has none, or when its process (pid %d) exits, for example stopped by hand", unhealthyFor, why, r.proc.pid)
					if kind == holdPublishing {
						msg = fmt.Sprintf("%s: not restarting it yet: %s, whose mount stopping it would take; it is restarted at the next probe that finds none under way", unhealthyFor, why)
					}
					a.log.Warn(msg, "plugin", id, "pid", r.proc.pid)
					a.e.PluginEvent(ctx, id, "plugin-restart-withheld", msg)
					withheld = kind
				}
				break
			}
			withheld = holdNone
			if err := r.stopCounted(release); err != nil {
				// It still runs (stuck in the kernel, say): its pid file stays, so that this
				// agent and the next still know it for the agent's, and no second plugin is
				// started beside it on its socket. The next probe past the timeout tries again.
				if !stuck && ctx.Err() == nil {
					msg := fmt.Sprintf("%s: stopping it failed: %v; not starting another beside it, trying again at each probe", unhealthyFor, err)
					a.log.Error(msg, "plugin", id, "pid", r.proc.pid)
					a.e.PluginEvent(ctx, id, "plugin-stop-failed", msg)
					stuck = true
				}
				break
			}
			wait := bo.Next()
			msg := fmt.Sprintf("%s: stopped it, restarting it in %s", unhealthyFor, wait)
			a.log.Warn(msg, "plugin", id, "pid", r.proc.pid)
			r.restarting("unhealthy")
			a.e.PluginEvent(ctx, id, "plugin-restart", msg)
			// Recorded down, as an exit is: before, plugin status said the agent ran the pid
			// it had just stopped, for the whole backoff, and after an agent stop in it
			// (TestPluginStoppedPastItsHealthTimeoutIsNotRecordedAsRunning).
			r.noteDown(ctx, engine.SupervisionExited, r.proc.pid,
				fmt.Sprintf("the agent stopped it: %s; its output is in %s", unhealthyFor, filepath.Join(a.logDir, id+".log")))
			removePidFile(a.runDir, id, r.proc.pid)
			r.proc, restarted, restartAt = nil, true, a.now().Add(wait)
			continue
		}

		if r.outdated() && r.replaceOutdated(ctx, &outdatedWithheld, &outdatedStuck) {
			r.proc, restarted, restartAt = nil, true, a.now()
			continue
		}

		interval := a.s.ProbeInterval
		if healthy && ready {
			interval = a.s.ProbeIntervalReady
		}
		var exited <-chan struct{}
		if r.proc != nil {
			exited = r.proc.exited
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-exited:
			timer.Stop()
			// What it forked is still in its group, maybe serving its socket: the agent's to
			// stop, or the next start would take it for a plugin no agent started. Only while
			// the plugin has no mounts, counted under the publish lock, as what it left outside
			// its group: a helper forked without setsid (a FUSE daemon) may serve them, and was
			// killed with them in use (TestHelperInACrashedPluginsGroupIsKeptUnderMounts).
			// Kept, it is stopped with the plugin once it has none, as those are (leaveUnder:
			// it carries the instance too).
			if rest := r.proc.groupRest(); len(rest) > 0 {
				if why, _, release := r.mountsHeld(ctx); why == "" {
					a.log.Warn("the plugin's process exited, leaving processes in its group: stopping them", "plugin", id, "pids", rest)
					if err := r.proc.stop(a.s.StopTimeout); err != nil {
						a.log.Warn("stopping what an exited plugin left", "plugin", id, "err", err)
					}
					release()
				} else {
					a.log.Warn(fmt.Sprintf("plugin %q exited, leaving processes in its process group; not stopping them: %s, which they may serve; "+
						"they are stopped with the plugin once it has no mounts", id, why), "plugin", id, "pids", rest)
					r.leaveUnder(r.proc.instance)
				}
			}
			// A plugin that daemonised left its group: its daemon, serving the socket, is the
			// plugin from now on. So is what it left serving the socket in its group, kept above
			// under mounts: before, the restart found the socket live and took the agent's own
			// plugin for one no agent started, never to be stopped or restarted again
			// (TestCrashedPluginsKeptGroupChildIsFollowedAsThePlugin).
			if r.followDaemon(ctx) {
				lastGood = a.now()
				continue
			}
			if ctx.Err() != nil {
				// The agent is stopping, maybe in the middle of the wait for a daemon still
				// starting: the process stays recorded, pid file and instance, for the stop,
				// which counts the mounts afresh and stops what it left (stopLeftBy) when there
				// are none, or leaves it for the next agent to adopt (adoptDaemon). Taken for
				// the plugin's end here, with its mounts uncountable on a context that is done,
				// the daemon was left running and its pid file removed: nothing stopped it, and
				// the next agent took it for a plugin no agent started.
				return
			}
			// What it left outside its group may serve its mounts (a FUSE daemon in a session
			// of its own): stopped only while the plugin has none, counted under the publish
			// lock, as at a clean stop and a restart past the health timeout.
			if why, _, release := r.mountsHeld(ctx); why == "" {
				a.stopLeftBy(r, r.proc)
				release()
			} else if left := outsideGroup(leftBy(r.proc.instance, false), r.proc.group()); len(left) > 0 {
				a.log.Warn(fmt.Sprintf("plugin %q exited, leaving processes outside its process group; not stopping them: %s, which they may serve; "+
					"they are stopped with the plugin once it has no mounts", id, why),
					"plugin", id, "pids", left)
				r.leaveUnder(r.proc.instance)
			}
			wait := bo.Next()
			msg := fmt.Sprintf("plugin %q exited (%s): restarting it in %s", id, r.proc.exitStatus(), wait)
			a.log.Warn(msg, "plugin", id, "pid", r.proc.pid)
			r.restarting("exited")
			a.e.PluginEvent(ctx, id, "plugin-exit", msg)
			r.noteDown(ctx, engine.SupervisionExited, r.proc.pid,
				fmt.Sprintf("%s; its output is in %s", r.proc.exitStatus(), filepath.Join(a.logDir, id+".log")))
			removePidFile(a.runDir, id, r.proc.pid)
			r.proc, restarted, restartAt = nil, true, a.now().Add(wait)
			// Record the plugin's health now rather than at the next start.
			r.probe(ctx)
		}
	}
}

// stopCounted stops the plugin's process, and what it left outside its process group when it
// is gone, while the plugin's publish lock mountsHeld took is held; release lets it go.
func (r *runner) stopCounted(release func()) error {
	defer release()
	if err := stopProcess(r.proc, r.a.s.StopTimeout); err != nil {
		return err
	}
	// Still under the publish lock: what it left may serve its socket.
	r.a.stopLeftBy(r, r.proc)
	return nil
}

// maxLeftUnder bounds leftUnder: a plugin crashing under mounts for weeks would grow it
// without end; the oldest instances' processes, left longest, are let go first, logged.
const maxLeftUnder = 64

// leaveUnder remembers instance, a process of the plugin that exited under mounts leaving
// processes outside its group, for stopLeftBy to stop them once the plugin has none.
func (r *runner) leaveUnder(instance string) {
	if slices.Contains(r.leftUnder, instance) {
		return // its group's and what it left outside it, both kept
	}
	if len(r.leftUnder) == maxLeftUnder {
		r.a.log.Warn("no longer looking for what an early process of the plugin left outside its group (too many exits under mounts)",
			"plugin", r.spec.ID, "instance", r.leftUnder[0])
		r.leftUnder = r.leftUnder[1:]
	}
	r.leftUnder = append(r.leftUnder, instance)
	r.saveLeftUnder()
}

// leftUnderPath is where a runner keeps leftUnder beside the plugin's pid file: an agent
// stopped while the mounts last, or a runner supervising the plugin anew after its exec block
// changed, lost it with the memory that held it, and what a crashed process left ran on after
// the next clean stop, known to no agent
// (TestHelperACrashedInstanceLeftIsStoppedByTheNextAgent,
// TestHelperACrashedInstanceLeftIsStoppedAfterAnExecChangeUnderMounts).
func leftUnderPath(runDir, id string) string { return pidFilePath(runDir, id) + ".left" }

// saveLeftUnder records leftUnder (its file gone when it is empty), logged when it cannot.
func (r *runner) saveLeftUnder() {
	path := leftUnderPath(r.a.runDir, r.spec.ID)
	var err error
	if len(r.leftUnder) == 0 {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = writeRunFile(path, []byte(strings.Join(r.leftUnder, "\n")+"\n"))
	}
	if err != nil {
		r.a.log.Warn("cannot record what the plugin's earlier processes left under mounts: a next agent will not stop it", "plugin", r.spec.ID, "err", err)
	}
}

// readLeftUnder is the leftUnder an earlier runner recorded for plugin id: instance tokens as
// newInstance makes them, anything else in the file ignored, as many as maxLeftUnder.
func readLeftUnder(runDir, id string) []string {
	b, err := readStateFile(leftUnderPath(runDir, id)) // as a pid file is: no FIFO, bounded
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if isInstance(line) && !slices.Contains(out, line) && len(out) < maxLeftUnder {
			out = append(out, line)
		}
	}
	return out
}

// isInstance reports whether s is an instance token newInstance could have made.
func isInstance(s string) bool {
	if len(s) != 24 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// outdated reports whether the supervised process runs another exec block than the plugin's
// declaration has now: one an earlier agent started and left running under mounts, adopted
// after the declaration changed (in the agent's config, or by a plugin register between two
// agents), or one this agent ran when a plugin register changed it (sync: supervised anew,
// adopted as it runs while it has mounts). A process whose exec block is not recorded (an older
// agent's pid file) is taken for the declared one.
func (r *runner) outdated() bool {
	return r.proc != nil && r.declared != "" && r.proc.execDigest != "" && r.proc.execDigest != r.declared
}

// replaceOutdated stops an outdated process (outdated) once the plugin holds no mounts, the
// rule for any stop of a plugin, so that the loop starts it again at once with the declared
// exec block; it reports whether it stopped it. Under mounts it is left running as it is,
// which is said once for each kind of reason (withholdNews), in the log, as an event and in
// the supervision plugin status shows (noteSupervision): until then the declaration in the
// config or the store is not what runs, and nothing else says so. A failed stop is said once
// (stuck), and tried again at the next probe.
func (r *runner) replaceOutdated(ctx context.Context, withheld *holdKind, stuck *bool) bool {
	a, id, pid := r.a, r.spec.ID, r.proc.pid
	runs := fmt.Sprintf("plugin %q runs (pid %d) with the exec block it was started with, not the one declared now (its command, args, env or socket changed since)", id, pid)
	// A declaration that cannot start (a command mistyped, one the agent refuses to run) is no
	// reason to stop the process that serves the plugin: it runs on, and the reason is said.
	if err := cannotStart(r.spec); err != nil {
		if withholdNews(*withheld, holdUnstartable) && ctx.Err() == nil {
			msg := fmt.Sprintf("%s: not restarting it with the declared one, which cannot start: %v; it runs on as started until the exec block is mended", runs, err)
			a.log.Warn(msg, "plugin", id, "pid", pid)
			a.e.PluginEvent(ctx, id, "plugin-restart-withheld", msg)
			*withheld = holdUnstartable
		}
		return false
	}
	why, kind, release := r.mountsHeld(ctx)
	if why != "" {
		if withholdNews(*withheld, kind) && ctx.Err() == nil {
			msg := fmt.Sprintf("%s: not restarting it with the declared one: %s, and stopping a plugin under mounts takes them from the allocs using them; "+
				"it is restarted with it once it has none, or when its process exits", runs, why)
			if kind == holdPublishing {
				msg = fmt.Sprintf("%s: not restarting it with the declared one yet: %s; it is restarted at the next probe that finds none under way", runs, why)
			}
			a.log.Warn(msg, "plugin", id, "pid", pid)
			a.e.PluginEvent(ctx, id, "plugin-restart-withheld", msg)
			*withheld = kind
		}
		return false
	}
	*withheld = holdNone
	if err := r.stopCounted(release); err != nil {
		if !*stuck && ctx.Err() == nil {
			msg := fmt.Sprintf("%s, and holds no mounts: stopping it failed: %v; not starting another beside it, trying again at each probe", runs, err)
			a.log.Error(msg, "plugin", id, "pid", pid)
			a.e.PluginEvent(ctx, id, "plugin-stop-failed", msg)
			*stuck = true
		}
		return false
	}
	msg := fmt.Sprintf("%s, and holds no mounts: stopped it, starting it with the declared one", runs)
	a.log.Info(msg, "plugin", id, "pid", pid)
	r.restarting("exec_changed")
	a.e.PluginEvent(ctx, id, "plugin-restart", msg)
	removePidFile(a.runDir, id, pid)
	return true
}

// followDaemon, once the plugin's process exited, looks for the daemon it left serving its
// socket outside its process group (daemonOf) and, when there is one, records it in the pid
// file and supervises it as the plugin, saying so. It reports whether it did. A process serving
// the socket that the agent may not take for the plugin's is named in a warning: the start that
// follows finds the socket live and probes it only.
func (r *runner) followDaemon(ctx context.Context) bool {
	a, id, socket := r.a, r.spec.ID, execEndpoint(r.spec)
	beforeFollowDaemon(socket)
	d, err := daemonOf(ctx, r.proc, socket, a.s.ProbeInterval, a.s.HealthTimeout, a.now, a.supervisedElsewhere(r))
	if err != nil {
		if !errors.Is(err, errNoDaemon) {
			a.log.Warn(fmt.Sprintf("plugin %q exited (%s): %v", id, r.proc.exitStatus(), err), "plugin", id, "pid", r.proc.pid)
		}
		return false
	}
	d.execDigest, d.served = r.proc.execDigest, r.proc.served // started with its parent's exec block
	if err := writePidFile(a.runDir, id, d); err != nil {
		// Unrecorded, a later agent would take it for a plugin no agent started: stopped, and
		// the plugin started again, as for a start whose pid file cannot be written.
		a.log.Error(fmt.Sprintf("plugin %q daemonised as pid %d, which cannot be recorded: stopping it", id, d.pid), "plugin", id, "err", err)
		if err := d.stop(a.s.StopTimeout); err != nil {
			a.log.Warn("stopping the plugin's daemon", "plugin", id, "pid", d.pid, "err", err)
		}
		return false
	}
	msg := fmt.Sprintf("plugin %q daemonised: its process (pid %d) exited (%s), leaving pid %d serving %s outside its process group; supervising pid %d as the plugin",
		id, r.proc.pid, r.proc.exitStatus(), d.pid, socket, d.pid)
	if d.group() == r.proc.group() {
		msg = fmt.Sprintf("plugin %q exited (%s) under mounts, leaving pid %d of its process group serving %s, kept as the mounts may need it; supervising pid %d as the plugin",
			id, r.proc.exitStatus(), d.pid, socket, d.pid)
	}
	a.log.Info(msg, "plugin", id, "pid", d.pid)
	a.e.PluginEvent(ctx, id, "plugin-daemon", msg)
	r.proc = d
	r.publish()
	return true
}

// outsideGroup is pids without those in process group pgrp: what leftBy found that is not
// already kept with the group (said once, as the group's).
func outsideGroup(pids []int, pgrp int) []int {
	return slices.DeleteFunc(pids, func(pid int) bool {
		g, live := procGroup(pid)
		return live && g == pgrp
	})
}

// supervisedElsewhere returns whether a pid, or its process group, is the process another
// runner than r supervises.
func (a *Agent) supervisedElsewhere(r *runner) func(pid, pgrp int) bool {
	return func(pid, pgrp int) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, o := range a.runners {
			if o == r {
				continue
			}
			o.smu.Lock()
			p := o.sPid
			o.smu.Unlock()
			if p > 0 && (p == pid || p == pgrp) {
				return true
			}
		}
		return false
	}
}

// holdKind is the kind of reason mountsHeld gives. A restart withheld is logged once per kind
// in an unhealthy spell: again when the kind changes (a publish under way, whose message says the
// plugin is restarted once it ends, then mounts, which keep it running), not when only the count
// in the text does (a release under way takes "2 mounts" to "1 mounts" between two probes), nor
// for a publish or release under way once mounts were logged (withholdNews).
type holdKind int

const (
	holdNone        holdKind = iota
	holdMounts               // the store records mounts or mounts in doubt
	holdPublishing           // a publish or a release through the plugin holds its publish lock
	holdUncounted            // the count failed, which counts as mounts
	holdUnstartable          // the declared exec block cannot start (replaceOutdated)
)

// withholdNews reports whether a restart withheld for a reason of kind now is to be logged,
// when one of kind logged was logged already this unhealthy spell: when the kind changed, but
// not for a publish or release under way while the plugin was withheld for its mounts. Every
// release takes its undoing of a staging or an attachment under the publish lock (undoUnused),
// so a look in that moment found a release under way, and logged the withheld restart a
// second time, saying the plugin is restarted once it ends, for the mounts already reported
// going away (TestAgentDoesNotRestartAnUnhealthyPluginUnderMounts, which wants one).
func withholdNews(logged, now holdKind) bool {
	return now != logged && !(logged == holdMounts && now == holdPublishing)
}

// mountsHeld says why the plugin may hold mounts ("it has 2 mounts and 1 in doubt"), and the
// kind of that reason, or "" and holdNone when it holds none: the store says so, and no publish
// through it is under way. A count that cannot be made counts as mounts. With "", the plugin's
// publish lock is held until release (Engine.HoldPluginMountsOf), for the stop; release is
// always to be called.
func (r *runner) mountsHeld(ctx context.Context) (why string, kind holdKind, release func()) {
	// With the publish locks of the sockets the process serves, which the plugin as stored may
	// no longer name (registered again on another socket while an earlier agent left the
	// process running): a publish through them under way holds their lock. Before, an
	// outdated process was stopped under it (replaceOutdated;
	// TestAdoptedOutdatedPluginIsNotStoppedUnderAPublishOnItsOldSocket).
	var served *spec.Plugin
	if r.proc != nil {
		served = r.proc.served
	}
	m, release, err := r.a.e.HoldPluginMountsOf(ctx, r.spec.ID, served)
	switch {
	case err != nil:
		why, kind = fmt.Sprintf("its mounts could not be counted (%v)", err), holdUncounted
	case m.Publishing:
		why, kind = "a volume is being published or released through it", holdPublishing
	case m.Any():
		why, kind = fmt.Sprintf("it has %d mounts and %d in doubt", m.Mounts, m.InDoubt), holdMounts
	}
	if why != "" {
		release()
		release = func() {}
	}
	return why, kind, release
}

// probe asks the engine to probe the plugin (reconnecting and fingerprinting again when it
// restarted) and record the result and any change of health as an event; it logs changes.
func (r *runner) probe(ctx context.Context) (healthy, ready bool, reason string) {
	infos, err := r.a.e.PluginStatus(ctx, r.spec.ID)
	if ctx.Err() != nil {
		return false, false, ""
	}
	state := "unhealthy"
	defer func() { r.publish() }()
	var latency time.Duration
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return false, false, "not registered" // deregistered: sync stops this runner
	case err != nil:
		reason = err.Error()
	case len(infos) == 1:
		healthy, ready, reason = infos[0].Healthy, infos[0].Ready, infos[0].LastError
		latency = time.Duration(infos[0].ProbeLatency)
		switch {
		case healthy && ready:
			state = "healthy"
		case healthy:
			state = "not ready"
		}
	}
	r.a.obs.PluginProbed(r.spec.ID, healthy, ready, latency)
	if state != r.state {
		if state == "healthy" {
			r.a.log.Info("plugin healthy", "plugin", r.spec.ID)
		} else {
			r.a.log.Warn("plugin "+state, "plugin", r.spec.ID, "reason", reason)
		}
		r.state = state
	}
	return healthy, ready, reason
}

// startFailed reports the plugin unhealthy after a start of it failed, as a probe finding
// nothing would: no process runs to probe, and the runner goes on to the next start. It went
// from one failed start to the next unreported: /healthz said "" ("before the first probe") for
// as long as the agent ran, and volctl_plugin_healthy had no series for it, so an alert on it
// never fired for a plugin down for good (TestPluginThatNeverStartsIsReportedUnhealthy).
func (r *runner) startFailed() {
	r.a.obs.PluginProbed(r.spec.ID, false, false, 0)
	r.state = "unhealthy"
	r.publish()
}

// startOrAdopt starts the plugin's process, or adopts the one an earlier agent started and left
// running (because it had mounts, or the agent was killed), whether or not it answers on its
// socket yet: it may be starting, or busy, and a second copy beside it would fight it for the
// socket. started is true when it started one.
func (r *runner) startOrAdopt(ctx context.Context) (started bool, err error) {
	a, id := r.a, r.spec.ID
	sockets := execSockets(r.spec)
	p, unproven := adoptFromPidFile(ctx, a.runDir, id)
	if p != nil {
		r.proc = p
		a.log.Info("adopted the running plugin", "plugin", id, "pid", p.pid)
		return false, nil
	}
	if unproven != nil {
		a.log.Warn(fmt.Sprintf("the plugin's pid file names pid %d, which runs with the recorded start time but without the instance the agent started the plugin with in its environment: "+
			"it is not the plugin, or not one the agent can prove is; leaving it alone, never signalling it", unproven.pid), "plugin", id, "pid", unproven.pid)
		removePidFile(a.runDir, id, unproven.pid)
	}
	d, err := adoptDaemon(ctx, a.runDir, id, execEndpoint(r.spec))
	if d != nil {
		if err != nil {
			// Unrecorded, the next agent could not tell it for the plugin's: stopped, and the
			// plugin started again, as for a start whose pid file cannot be written.
			if serr := d.stop(a.s.StopTimeout); serr != nil {
				err = fmt.Errorf("%w; stopping it: %v", err, serr)
			}
			return false, fmt.Errorf("recording the daemon the plugin left (pid %d): %w", d.pid, err)
		}
		r.proc = d
		a.log.Info("adopted the plugin's daemon, left by an agent that ended before recording it", "plugin", id, "pid", d.pid)
		a.e.PluginEvent(ctx, id, "plugin-daemon", fmt.Sprintf("plugin %q: adopted pid %d, the daemon its process left serving %s (found by the instance in its environment)", id, d.pid, execEndpoint(r.spec)))
		return false, nil
	}
	if p, from := a.orphanServing(ctx, id, sockets); p != nil {
		// Deregistered while no agent ran, its process left serving this socket (under this
		// plugin's mounts): handed over as a running agent's retire would have. Before, taken
		// for a plugin no agent started, probed only, never stopped or restarted
		// (TestHeirOfAPluginDeregisteredWhileNoAgentRanAdoptsItsProcess).
		if err := a.handOver(from, id, p); err == nil {
			p.watch(ctx)
			r.proc = p
			msg := fmt.Sprintf("plugin %q was deregistered while no agent ran: its process (pid %d), left serving %s, is handed to %q, whose runner supervises it from now on",
				from, p.pid, spec.QuoteName(sockets[0]), id)
			a.log.Info(msg, "plugin", id, "pid", p.pid, "from", from)
			a.e.PluginEvent(ctx, id, "plugin-handover", msg)
			return false, nil
		} else {
			a.log.Warn("handing a deregistered plugin's process to the plugin on its socket", "plugin", id, "from", from, "pid", p.pid, "err", err)
		}
	}
	if socketsLive(sockets) {
		r.foreign = true
		r.foreignPid, r.foreignNote = foreignServer(sockets[0])
		a.log.Warn("plugin socket is live but no volctl agent started it: probing it only, never stopping it",
			append([]any{"plugin", id, "socket", sockets[0]}, servedBy(sockets[0])...)...)
		return false, nil
	}
	for _, s := range sockets {
		// Private, as hostpath.Listen makes its own: whoever can connect to a plugin can have
		// it mount anywhere, and a plugin that listens with a plain listen gets a socket whose
		// mode the umask decides (0775 under umask 002), open to the group through a 0750 one.
		if err := os.MkdirAll(filepath.Dir(s), 0o700); err != nil {
			return false, fmt.Errorf("socket directory: %w", err)
		}
		// A socket file left by a plugin killed with SIGKILL refuses connections, and a plugin
		// that binds with a plain listen cannot start while it is there.
		if err := hostpath.RemoveStaleSocket(s); err != nil {
			return false, err
		}
	}
	p, err = startProcess(r.spec, a.runDir, a.logDir)
	if err != nil {
		return false, err
	}
	r.proc = p
	a.log.Info("started plugin", "plugin", id, "pid", p.pid, "command", r.spec.Exec.Command,
		"log", filepath.Join(a.logDir, id+".log"))
	a.e.PluginEvent(ctx, id, "plugin-start", fmt.Sprintf("plugin %q started (pid %d)", id, p.pid))
	// Give it a moment to create its socket, so its first probe does not record it unhealthy
	// for the plain reason that it is still starting.
	deadline := time.Now().Add(a.s.ProbeInterval)
	for !socketsExist(sockets) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return true, nil
		case <-p.exited:
			return true, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true, nil
}

// orphanServing finds the process an agent started for a plugin ID that is no longer
// registered (its pid file left in the run directory, its process proven by its instance) that
// serves the live socket of sockets: plugin id's heir, deregistered while no agent ran. nil, ""
// when there is none.
func (a *Agent) orphanServing(ctx context.Context, id string, sockets []string) (*process, string) {
	if len(sockets) == 0 || !socketsLive(sockets) {
		return nil, ""
	}
	peer := peerPid(sockets[0])
	if peer <= 0 {
		return nil, ""
	}
	holder, _ := holderOf(sockets[0], peer, func(int) bool { return true })
	peerGroup, _ := procGroup(peer)
	entries, err := os.ReadDir(a.runDir)
	if err != nil {
		return nil, ""
	}
	for _, en := range entries {
		from, ok := strings.CutSuffix(en.Name(), ".pid")
		if en.Name() == "agent.plugin-pid" {
			from, ok = "agent", true
		} else if from == "agent" {
			continue // the agent's own
		}
		if !ok || from == id || !errors.Is(a.e.PluginRecorded(ctx, from), engine.ErrNotFound) {
			continue
		}
		p := readPidFile(a.runDir, from)
		if p == nil || !p.alive() || p.instance == "" || !hasInstance(p.pid, p.instance) {
			continue
		}
		if pgrp, live := procGroup(p.pid); p.pgid != 0 && (!live || pgrp != p.pgid) {
			p.pgid = 0
		}
		if peer == p.pid || holder == p.pid || peerGroup == p.group() {
			return p, from
		}
	}
	return nil, ""
}

// supervision is what the agent records it does with a plugin's process (store.Supervision).
type supervision struct {
	mode string
	pid  int
	note string
}

// noteSupervision records, when it changed, what the runner does with its exec plugin's
// process: runs it (started or adopted), follows its daemon, or probes it only (a foreign
// socket). plugin status and the dashboard show it: the exec block alone said "Supervised: yes"
// of a plugin whose socket a process the agent did not start serves, which it never stops or
// restarts. A record that fails is logged and tried again at the next probe.
func (r *runner) noteSupervision(ctx context.Context) {
	if r.spec.Exec == nil {
		return
	}
	var s supervision
	switch {
	case r.foreign:
		s = supervision{mode: engine.SupervisionProbed, pid: r.foreignPid, note: r.foreignNote}
	case r.proc == nil:
		return
	case r.proc.daemon:
		s = supervision{mode: engine.SupervisionDaemon, pid: r.proc.pid}
	default:
		s = supervision{mode: engine.SupervisionRuns, pid: r.proc.pid}
	}
	if r.outdated() {
		s.note = "it runs the exec block it was started with, not the one declared now, and is restarted with that once it has no mounts"
		if err := cannotStart(r.spec); err != nil {
			s.note = "it runs the exec block it was started with, not the one declared now, which cannot start; it runs on until that is mended"
		}
	}
	r.record(ctx, s)
}

// noteDown records that no process of the plugin runs while the agent starts it again: its
// start failed (SupervisionStartFailed, the error the note), or the process it ran exited
// (SupervisionExited, the pid, the note its exit status and where its output went). Before,
// the record kept saying "the agent runs it" of a pid that had exited, or nothing of a command
// that never started, and plugin status asked "is the plugin running?" while only the agent's
// log said why not (TestPluginStatusSaysWhyTheAgentCannotStartThePlugin).
func (r *runner) noteDown(ctx context.Context, mode string, pid int, note string) {
	r.record(ctx, supervision{mode: mode, pid: pid, note: note})
}

// record records s as the runner's supervision, and its mates', when it changed.
func (r *runner) record(ctx context.Context, s supervision) {
	r.noteMates(ctx, s)
	if s == r.recorded {
		return
	}
	if err := r.a.recordSupervision(ctx, r.spec.ID, s, !r.recordErr); err != nil {
		r.recordErr = true
		return
	}
	r.recorded, r.recordErr = s, false
}

// noteMates records, when it changed, s as the supervision of each other plugin ID on the
// runner's socket (declared with an exec block or without), whose process the runner runs for them
// (oneProcessPerSocket): their own runners probe them only and record nothing, which left plugin
// status saying "Supervised: yes" from the exec block with no record, or a record of a process
// their runner had stopped when the socket went to this one.
func (r *runner) noteMates(ctx context.Context, s supervision) {
	r.a.mu.Lock()
	mates := r.a.mates[r.spec.ID]
	r.a.mu.Unlock()
	for id := range r.mates {
		if !slices.Contains(mates, id) {
			delete(r.mates, id) // deregistered, or its own runner's now
		}
	}
	for _, id := range mates {
		ms := mateSupervision(r.spec.ID, s)
		if prev, ok := r.mates[id]; ok && prev == ms {
			continue
		}
		if r.mates == nil {
			r.mates = map[string]supervision{}
		}
		if err := r.a.recordSupervision(ctx, id, ms, !r.recordErr); err == nil {
			r.mates[id] = ms
		}
	}
}

// mateSupervision is what the runner of plugin owner, whose process serves a mate's socket too,
// records of the mate: what it does with the process, saying it is owner's.
func mateSupervision(owner string, s supervision) supervision {
	note := fmt.Sprintf("one process serves its socket and plugin %q's, which the agent runs as %q's (the first of the IDs on the socket declared with an exec block)", owner, owner)
	if s.note != "" {
		note += "; " + s.note
	}
	s.note = note
	return s
}

// recordSupervision records s as what the agent does with plugin id's process; a failure is
// logged when warn says so (a plugin deregistered meanwhile has no record to keep).
func (a *Agent) recordSupervision(ctx context.Context, id string, s supervision, warn bool) error {
	err := a.e.RecordSupervision(ctx, id, s.mode, s.pid, s.note, os.Getpid())
	if err != nil && warn && !errors.Is(err, engine.ErrNotFound) && ctx.Err() == nil {
		a.log.Warn("recording what the agent does with the plugin's process, for plugin status (tried again at each probe)", "plugin", id, "mode", s.mode, "err", err)
	}
	return err
}

// restarting counts a restart of the supervised plugin, for Status and the metrics.
func (r *runner) restarting(reason string) {
	r.smu.Lock()
	r.sRestarts++
	r.smu.Unlock()
	r.a.obs.PluginRestarted(r.spec.ID, reason)
}

// sleep waits for d or ctx, reporting false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
