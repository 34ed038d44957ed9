package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin that daemonises (forks, the child calls setsid and maybe forks again, the process the
// agent started exits 0) leaves the process group the agent made for it: the daemon that keeps
// its socket is in a session of its own. The agent makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), so such a daemon is re-parented to the agent rather than to init,
// and when the started process exits the agent asks the socket who serves it (SO_PEERCRED of a
// connection: the listener's pid). A process outside the plugin's group that descends from the
// agent is the plugin's daemon: the agent records it in the pid file (with its start time, which
// tells it from a later process with its pid) and supervises it as the plugin (daemonOf).
//
// Being a subreaper, the agent must reap what is re-parented to it and exits (the first fork of
// a double fork, the daemon itself): reapOrphans reaps a zombie child only when no exec.Cmd owns
// it (the plugins' start helpers, recorded in ownedChildren while they start and run) and it is
// not in the agent's own process group (where an exec.Cmd of other code, without Setpgid, puts
// its child): exec.Cmd.Wait would otherwise lose its child's status.

// subreaper is whether the agent made itself a child subreaper (it tries once, at Run).
var (
	subreaperOnce sync.Once
	subreaper     bool
	subreaperErr  error
)

// becomeSubreaper makes this process a child subreaper. It stays one for its life: several
// agents run in one test binary, and a process has no use for undoing it.
func becomeSubreaper() error {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
		subreaper = subreaperErr == nil
	})
	return subreaperErr
}

// ownedChildren are the pids of children an exec.Cmd of the agent owns (startProcess), which
// reapOrphans leaves to their Wait. childMu is held across cmd.Start and the recording, and by
// reapOrphans, so a child that exits at once is never taken for an orphan.
var (
	childMu       sync.Mutex
	ownedChildren = map[int]bool{}
)

// reapScans counts reapOrphans's scans of /proc, for a test.
var reapScans atomic.Int64

// reapOrphans reaps the zombies re-parented to the agent (see above) and returns how many.
func reapOrphans() int {
	if !subreaper {
		return 0
	}
	reapScans.Add(1)
	childMu.Lock()
	defer childMu.Unlock()
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	n := 0
	for _, pid := range procPids() {
		if ownedChildren[pid] {
			continue
		}
		f, err := procStat(pid)
		if err != nil || len(f) < 3 || f[0] != "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		if ppid != self || pgrp == ownGroup {
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
			n++
		}
	}
	return n
}

// hasStrayChild reports whether a live child of the agent is not one an exec.Cmd owns: an
// orphan re-parented to it, such as a plugin's daemon or the fork that makes it. Without
// subreaper nothing is re-parented to the agent, and it reports true (daemonOf waits its time).
func hasStrayChild() bool {
	if !subreaper {
		return true
	}
	childMu.Lock()
	defer childMu.Unlock()
	self := os.Getpid()
	for _, pid := range procPids() {
		if ownedChildren[pid] {
			continue
		}
		if f, err := procStat(pid); err == nil && len(f) >= 2 && !ended(pid, f[0]) && f[1] == strconv.Itoa(self) {
			return true
		}
	}
	return false
}

// pluginLeft reports whether a live process with the plugin's instance in its environment runs
// outside the agent's own process group: one its process left (the fork that makes a daemon,
// the daemon before it binds). As a subreaper the agent looks at the orphans re-parented to it
// only (a daemon's parent, the first fork, has exited or is about to); otherwise at every
// process it may read.
func pluginLeft(instance string) bool { return len(leftBy(instance, true)) > 0 }

// leftBy lists the live processes with the plugin's instance in their environment outside the
// agent's own process group that no exec.Cmd of the agent owns; with orphansOnly and the agent
// a subreaper, only those re-parented to it (pluginLeft).
func leftBy(instance string, orphansOnly bool) []int {
	if instance == "" {
		return nil
	}
	self, ownGroup := strconv.Itoa(os.Getpid()), strconv.Itoa(syscall.Getpgrp())
	var out []int
	for _, pid := range procPids() {
		f, err := procStat(pid)
		if err != nil || len(f) < 3 || ended(pid, f[0]) || f[2] == ownGroup || (orphansOnly && subreaper && f[1] != self) {
			continue
		}
		childMu.Lock()
		owned := ownedChildren[pid]
		childMu.Unlock()
		if !owned && hasInstance(pid, instance) {
			out = append(out, pid)
		}
	}
	return out
}

// stopLeft stops, at a clean stop of a plugin that has no mounts, what its process left
// running outside its process group: a daemon in a session of its own that the agent has not
// recorded yet (the plugin's process still ran, or the agent stopped while it looked for the
// daemon), found by the plugin's instance in its environment, which nothing but the plugin's
// own processes carries. Each gets SIGTERM (its group, when it leads one), up to timeout to
// end, then SIGKILL and up to killWait more. It returns the pids it found.
func stopLeft(instance string, timeout time.Duration) []int {
	pids := leftBy(instance, false)
	left := make([]*process, 0, len(pids))
	for _, pid := range pids {
		if tick, err := procStartTick(pid); err == nil {
			left = append(left, &process{pid: pid, startTick: tick})
		}
	}
	// Only a process still the one found (its start time) is signalled, never a later one
	// that got its pid.
	signal := func(sig syscall.Signal) {
		for _, p := range left {
			if pgrp, live := procGroup(p.pid); live && p.alive() {
				target := p.pid
				if pgrp == p.pid {
					target = -p.pid
				}
				_ = syscall.Kill(target, sig)
			}
		}
	}
	gone := func() bool {
		reapOrphans()
		for _, p := range left {
			if _, live := procGroup(p.pid); live && p.alive() {
				return false
			}
		}
		return true
	}
	signal(syscall.SIGTERM)
	if !waitUntil(gone, timeout) {
		// The kernel ends a killed process a while after kill(2) returns (longer the more
		// memory it tears down), and closes its files, the plugin's socket among them, only
		// then: waited for, as process.stop waits, or the restart that follows finds the
		// socket live and takes it for a plugin no agent started.
		signal(syscall.SIGKILL)
		waitUntil(gone, killWait)
	}
	return pids
}

// killWait is how long a stop waits for a process to end after SIGKILL.
const killWait = 5 * time.Second

// waitUntil polls done every 50 ms for up to d, and reports whether it came true.
func waitUntil(done func() bool, d time.Duration) bool {
	for deadline := time.Now().Add(d); !done(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// procPids lists the pids in /proc.
func procPids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(entries))
	for _, en := range entries {
		if pid, err := strconv.Atoi(en.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// socketServer returns the pid of the process that serves a unix socket, 0 when nothing
// answers there: the listener's, as SO_PEERCRED reports it, unless that process no longer holds
// the listening socket (it listened, then daemonised, handing the socket on, and exited), when
// ours (nil: none) says which processes may be looked into for the one that holds it
// (socketHolder): the plugin's own, never another program's.
func socketServer(path string, ours func(pid int) bool) int {
	pid := peerPid(path)
	if pid > 0 && ours != nil {
		pid = socketHolder(path, pid, ours)
	}
	return pid
}

// peerPid is the pid SO_PEERCRED reports for a connection to the unix socket at path: the
// process that called listen() on it. 0 when nothing answers there.
func peerPid(path string) int { return engine.SocketPeer(path) }

// orphanOfAgent reports whether pid is a live descendant of this process through an orphan
// re-parented to it: not through a child an exec.Cmd owns (another plugin's process, whose
// descendants are that plugin's).
func orphanOfAgent(pid int) bool {
	self := os.Getpid()
	for range 64 { // a chain of parents longer than that is no daemon of ours
		f, err := procStat(pid)
		if err != nil || len(f) < 2 || ended(pid, f[0]) {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		switch {
		case err != nil || ppid <= 1:
			return false
		case ppid == self:
			childMu.Lock()
			owned := ownedChildren[pid]
			childMu.Unlock()
			return !owned
		}
		pid = ppid
	}
	return false
}

// mayHold reports whether pid may be the plugin's daemon holding its socket: a process with
// the plugin's instance in its environment, or one descending from an orphan re-parented to
// the agent (daemonOf then checks it is no other plugin's).
func (p *process) mayHold(pid int) bool { return hasInstance(pid, p.instance) || orphanOfAgent(pid) }

// errNoDaemon is daemonOf's answer when nothing it may supervise serves the socket.
var errNoDaemon = errors.New("no daemon")

// daemonOf looks, once the plugin's process p exited, for the daemon it left serving the
// socket: a live process outside p's group that descends from an orphan re-parented to the
// agent (a subreaper), and is no other plugin's process; or one in p's group with its instance,
// which the exit kept running because the plugin has mounts (in the group, it is otherwise
// stopped before this is asked). A process that exited 0 gets up to wait
// for its daemon to serve the socket (a daemon binds after its parent exits), and longer, up to
// patience, while a process it left with its instance in the environment runs (pluginLeft: a
// daemon still starting, on a slow or loaded machine); one that failed is looked at once. It
// returns the daemon, watched until ctx ends, or errNoDaemon; what serves the socket but may not
// be supervised (not the agent's descendant: the agent is no subreaper, or it is another
// program) is an error naming its pid.
//
// The patience is measured on now, the agent's clock (Config.Now), as the health timeout it is
// is measured by the runner: on the real clock, a daemon that took longer than that to bind on
// a loaded machine was taken for the plugin's end in tests about something else, and the
// plugin started again beside it (TestDaemonWaitIsOnTheAgentsClock). The wait for a server to
// appear at all stays on the real clock: it is ended early by nothing of the plugin's running.
//
// others reports whether a pid, or its process group, is another plugin's the agent supervises.
func daemonOf(ctx context.Context, p *process, socket string, wait, patience time.Duration, now func() time.Time, others func(pid, pgrp int) bool) (*process, error) {
	deadline, last := time.Now().Add(wait), now().Add(max(wait, patience))
	if p.exitStatus() != "exit status 0" {
		deadline, last = time.Now(), now()
	}
	for {
		reapOrphans()
		if pid := socketServer(socket, p.mayHold); pid > 0 && pid != p.pid {
			pgrp, live := procGroup(pid)
			switch {
			case !live:
			case pgrp == syscall.Getpgrp():
				return nil, errNoDaemon // the agent's own group
			case pgrp == p.group() && !hasInstance(pid, p.instance):
				return nil, errNoDaemon // in the plugin's group, not its: stopped with it (groupRest)
			case others(pid, pgrp):
				return nil, fmt.Errorf("socket %s is served by pid %d, which the agent supervises as another plugin", spec.QuoteName(socket), pid)
			case !orphanOfAgent(pid) && !hasInstance(pid, p.instance):
				why := "it is not an orphan re-parented to the agent, nor has the plugin's instance in its environment"
				if !subreaper {
					why = fmt.Sprintf("the agent could not make itself a child subreaper (%v), so a daemon is not re-parented to it", subreaperErr)
				}
				return nil, fmt.Errorf("socket %s is served by pid %d, outside the plugin's process group, which the agent cannot tell for the plugin's: %s", spec.QuoteName(socket), pid, why)
			default:
				if d := daemonProcess(ctx, pid, pgrp, p.instance); d != nil {
					return d, nil
				}
			}
		}
		waited := !time.Now().Before(deadline)
		if !hasStrayChild() || !now().Before(last) || (waited && !pluginLeft(p.instance)) {
			// Nothing the plugin left runs (its orphans are re-parented to the agent the
			// moment it exits), or past the probe interval nothing with its instance does, or
			// its patience ran out: no daemon will come.
			return nil, errNoDaemon
		}
		pace := 20 * time.Millisecond
		if waited {
			pace = 50 * time.Millisecond // pluginLeft reads environments: a gentler pace
		}
		select {
		case <-ctx.Done():
			return nil, errNoDaemon
		case <-time.After(pace):
		}
	}
}

// daemonProcess is the process to supervise for a plugin's daemon, pid in group pgrp, watched
// until ctx ends; nil when it has exited.
func daemonProcess(ctx context.Context, pid, pgrp int, instance string) *process {
	tick, err := procStartTick(pid)
	if err != nil {
		return nil
	}
	d := &process{pid: pid, startTick: tick, started: time.Now(), daemon: true, instance: instance, exited: make(chan struct{})}
	if pgrp != pid {
		if _, err := procStat(pgrp); err != nil { // its leader gone: the group is the daemon's
			d.pgid = pgrp
		}
	}
	d.watch(ctx)
	return d
}

// instanceEnv names a token, new at each start of a plugin, put in its environment and in its
// pid file: a daemon it leaves inherits it, which tells the plugin's daemon from another
// program on its socket when the agent cannot (it was killed before it recorded the daemon,
// or it is no subreaper).
const instanceEnv = "VOLCTL_AGENT_PLUGIN_INSTANCE"

// newInstance makes an instance token.
func newInstance() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hasInstance reports whether the environment pid was started with holds the plugin instance.
func hasInstance(pid int, instance string) bool {
	if instance == "" {
		return false
	}
	// A process whose first thread has exited (ended) has its environment read through a
	// thread still running.
	b, err := os.ReadFile(filepath.Join(procfs.Dir("/proc", pid), "environ"))
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(string(b), "\x00"), instanceEnv+"="+instance)
}

// adoptDaemon, when the plugin's pid file names a process that has exited, adopts the daemon
// it left serving the socket: the process serving it with the recorded instance in its
// environment (an agent killed after the plugin's process exited, before it recorded the
// daemon, left the pid file so). The pid file is rewritten for it. nil when there is none. It
// is looked for on the socket declared now, then on the one the process was started to serve
// (the pid file's sockets): the plugin registered since on another, the daemon left serving
// the old one was never adopted, its record overwritten by the next start, and ran on for
// good, unsupervised (TestDaemonLeftOnOldSocketIsAdoptedAfterASocketMove); adopted, it is
// outdated, and replaced once nothing is mounted through it (replaceOutdated).
func adoptDaemon(ctx context.Context, runDir, id, socket string) (*process, error) {
	rec := readPidFile(runDir, id)
	if rec == nil || rec.instance == "" || rec.alive() {
		return nil, nil
	}
	sockets := []string{socket}
	if rec.served != nil {
		if old := execEndpoint(*rec.served); old != socket {
			sockets = append(sockets, old)
		}
	}
	pid := 0
	for _, s := range sockets {
		if pid = socketServer(s, func(pid int) bool { return hasInstance(pid, rec.instance) }); pid > 0 {
			break
		}
	}
	pgrp, live := procGroup(pid)
	if pid <= 0 || !live || !hasInstance(pid, rec.instance) {
		return nil, nil
	}
	d := daemonProcess(ctx, pid, pgrp, rec.instance)
	if d == nil {
		return nil, nil
	}
	d.execDigest, d.served = rec.execDigest, rec.served // started with its parent's exec block
	return d, writePidFile(runDir, id, d)
}

// watch closes p.exited when p, a process that is not the agent's exec.Cmd child, ends
// (polled), until ctx ends; a daemon re-parented to the agent is reaped then.
func (p *process) watch(ctx context.Context) {
	crash.Go(func() {
		every(ctx, 250*time.Millisecond, func() bool {
			if p.alive() {
				return false
			}
			reapOrphans()
			close(p.exited)
			return true
		})
	})
}
