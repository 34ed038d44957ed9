package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
)

// childPid waits for a forking test plugin's child and returns its pid, killed when the test
// ends whatever the agent did.
func (f *fixture) childPid(id string) int {
	f.t.Helper()
	var pid int
	waitFor(f.t, "the plugin's child", func() bool {
		b, err := os.ReadFile(filepath.Join(f.dir, "hostpath-"+id, "child.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && alive(pid)
	})
	f.t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// startForker registers plugin fk, a forking test plugin in mode, and starts an agent.
func (f *fixture) startForker(mode string) (stop func() error) {
	f.register(f.execPlugin("fk", mode))
	s := testSettings
	s.StopTimeout = 300 * time.Millisecond // the child ignores SIGTERM: SIGKILL ends it
	return f.startAgent(s)
}

// A plugin's process may fork helpers, which stay in the process group the agent made for it.
// Stopping the plugin stops the whole group, even when the process the agent started exits at
// SIGTERM and leaves a helper that ignores it.
func TestAgentStopsThePluginsWholeProcessGroup(t *testing.T) {
	f := newFixture(t)
	stop := f.startForker("forker")
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("fk").Healthy })
	leader, child := f.pid("fk"), f.childPid("fk")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(leader) || alive(child) {
		t.Fatalf("after the agent stopped the plugin (no mounts): process %d alive %v, its child %d alive %v",
			leader, alive(leader), child, alive(child))
	}
}

// A plugin whose process exits while a child it forked keeps serving the socket (it
// daemonized) left that child behind: the agent took it for a plugin no agent started, probed
// it only and never stopped it. The rest of the group of a process that exited is the agent's
// to stop, before it starts the plugin again.
func TestAgentStopsWhatAnExitedPluginLeftInItsGroup(t *testing.T) {
	f := newFixture(t)
	stop := f.startForker("forker-exits")
	first := f.childPid("fk")
	waitFor(t, "the child left by the exited plugin to be stopped", func() bool { return !alive(first) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.logs.String(), "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's child for a foreign plugin:\n%s", f.logs)
	}
}

// A plugin's output goes to its log file directly, so that it survives the agent. A plugin that
// floods it, while it runs, must not fill the state dir's file system, where the store is: the
// log is kept under its size limit while the plugin runs, not only at its next start.
func TestAgentKeepsARunningPluginsLogBounded(t *testing.T) {
	f := newFixture(t)
	log := f.chattyLogBounded(testSettings)
	if st, err := os.Stat(log + ".1"); err != nil || st.Size() == 0 {
		t.Errorf("the rotated log %s.1: %v, want the older output there", log, err)
	}
}

// A plugin killed with SIGKILL (by the agent, past its stop timeout, or by the OOM killer)
// leaves its socket file behind, refusing connections. Many plugins bind with a plain listen,
// which fails while the file is there: the agent removes a stale socket before it starts the
// plugin, or the plugin never starts again.
func TestAgentRemovesAStaleSocketBeforeStarting(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("plain", "plainlisten")
	if err := os.MkdirAll(filepath.Dir(sp.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: sp.Socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	lis.SetUnlinkOnClose(false)
	lis.Close() // the file stays, refusing connections
	f.register(sp)
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be started and healthy", func() bool { return f.plugin("plain").Healthy })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A socket path taken by something that is not a socket is not removed: the start fails,
// naming it.
func TestAgentLeavesANonSocketAtTheSocketPath(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("plain", "plainlisten")
	if err := os.MkdirAll(filepath.Dir(sp.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	// Registered first: a registration refuses a path that holds something other than a
	// socket (TestExecPluginRegisteredOnAHungSocketIsNotSaidNotStarted); the file comes after.
	f.register(sp)
	if err := os.WriteFile(sp.Socket, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := f.startAgent(testSettings)
	waitFor(t, "a failed start", func() bool { return len(f.events("plugin-start")) >= 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(sp.Socket); err != nil || string(b) != "data" {
		t.Errorf("the file at the socket path: %q, %v; want it untouched", b, err)
	}
	if ev := f.events("plugin-start")[0]; !strings.Contains(ev, "not a socket") || !strings.Contains(ev, sp.Socket) {
		t.Errorf("plugin-start event = %q, want it to name the path that is not a socket", ev)
	}
}

// A plugin without STAGE_UNSTAGE_VOLUME has no staging to count: a claim of it that is
// node-staged had NodePublishVolume sent, or being sent, and may have its mount. The agent
// leaves such a plugin running when it stops, as it does one with a published claim.
func TestAgentLeavesAPluginRunningUnderAPublishInDoubt(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("ns", "nostage-publish-times-out"))
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("ns").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "ns", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err == nil {
		t.Fatal("claim succeeded despite NodePublishVolume timing out")
	}
	if c, err := f.e.ClaimInfo(f.ctx, "db", "web-0"); err != nil || c.State != "node-staged" {
		t.Fatalf("claim = %+v, %v; want it left node-staged", c, err)
	}
	pid := f.pid("ns")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("the agent stopped plugin pid %d with a claim whose NodePublishVolume may have mounted", pid)
	}
}

// A claim command in another process that has sent NodeStageVolume, which has not answered
// yet, has a mount in the making: the staging intent it committed before the RPC is all the
// store shows of it. The agent stopping meanwhile leaves the plugin running, as under a
// staging in place; stopped, the plugin would leave the mount, if it makes one, with nothing
// to unstage it.
func TestAgentLeavesAPluginRunningUnderAStageInFlight(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("sh", "stage-hangs")
	f.register(sp)
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("sh").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "sh", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	other := f.openEngine() // the claim command, another process
	ctx, cancel := context.WithCancel(f.ctx)
	claimed := make(chan error, 1)
	go func() {
		_, err := other.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		claimed <- err
	}()
	defer func() { cancel(); <-claimed }()
	waitFor(t, "NodeStageVolume to be in flight", func() bool {
		_, err := os.Stat(filepath.Join(f.dir, "hostpath-sh", "stage-called"))
		return err == nil
	})
	pid := f.pid("sh")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("the agent stopped plugin pid %d while its NodeStageVolume was in flight", pid)
	}
	if !strings.Contains(f.logs.String(), "leaving plugin running") {
		t.Errorf("agent log does not say why the plugin is left running:\n%s", f.logs)
	}
}

// An agent killed (SIGKILL, the OOM killer) right after it started a plugin's process, before
// it recorded its pid, must not leave a plugin that no record names: the next agent would take
// it for a plugin no agent started, and never stop it, or start a second one on its socket.
// The record precedes the plugin: killed there, the agent leaves no plugin running, and the
// next agent starts one, its own, and stops it.
func TestAgentKilledBeforeRecordingAPluginLeavesNoStrayPlugin(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	f.runAgentKilledAt("agent-killed-after-start")
	// Whatever it started either serves the socket soon or is gone.
	root := filepath.Join(f.dir, "hostpath-hp")
	t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + root) })
	waitFor(t, "the plugin to serve or be gone", func() bool {
		return socketsLive([]string{sp.Socket}) || len(pidsWithEnv(pluginRootEnv+"="+root)) == 0
	})

	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	if strings.Contains(f.logs.String(), "no volctl agent started it") {
		t.Errorf("the next agent took the plugin the killed agent started for a foreign one:\n%s", f.logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if left := pidsWithEnv(pluginRootEnv + "=" + root); len(left) != 0 {
		t.Errorf("plugin processes %v still run after the agent stopped with no mounts", left)
	}
}

// A plugin an agent recorded and left running (under mounts, or the agent was killed) may not
// answer on its socket yet when the next agent starts: still starting, or too busy to accept.
// It is the agent's plugin all the same, to adopt: starting a second one would have two
// plugins on one socket, the new one removing the first one's socket file as stale.
func TestAgentAdoptsARecordedPluginNotAnsweringYet(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	cmd := exec.Command("sleep", "60") // the recorded plugin, not serving its socket yet
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tick, err := procStartTick(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writePidFile(filepath.Join(f.dir, "run"), "hp", &process{pid: cmd.Process.Pid, startTick: tick}); err != nil {
		t.Fatal(err)
	}
	s := testSettings
	s.HealthTimeout = time.Hour
	stop := f.startAgent(s)
	waitFor(t, "the agent to adopt or start the plugin", func() bool {
		return strings.Contains(f.logs.String(), "adopted the running plugin") || strings.Contains(f.logs.String(), "started plugin")
	})
	if n := f.pid("hp"); n != cmd.Process.Pid || strings.Contains(f.logs.String(), "started plugin") {
		t.Errorf("the agent started a second plugin (pid file %d) beside the recorded one, pid %d:\n%s", n, cmd.Process.Pid, f.logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// pidsWithEnv lists the live processes whose environment holds kv.
func pidsWithEnv(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || !alive(pid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), kv) {
			out = append(out, pid)
		}
	}
	return out
}

func killWithEnv(kv string) {
	for _, pid := range pidsWithEnv(kv) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// A pid file whose pid now belongs to another process (a reused pid: another start time) is
// not adopted, and a process recorded with another start time is never signalled, nor is its
// process group, although a group of that ID runs.
func TestReusedPidIsNeitherAdoptedNorSignalled(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // leads a group of its pid, as a plugin would
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	tick, err := procStartTick(pid)
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	stale := &process{pid: pid, startTick: tick + 1}
	if err := writePidFile(runDir, "p", stale); err != nil {
		t.Fatal(err)
	}
	if p, _ := adoptFromPidFile(context.Background(), runDir, "p"); p != nil {
		t.Fatalf("adopted pid %d recorded with another start time", pid)
	}
	if err := stale.stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("stopping a process recorded with another start time signalled pid %d", pid)
	}
	if err := writePidFile(runDir, "p", &process{pid: pid, startTick: tick}); err != nil {
		t.Fatal(err)
	}
	if p, _ := adoptFromPidFile(context.Background(), runDir, "p"); p == nil || p.pid != pid {
		t.Fatalf("the pid file with the right start time was not adopted: %+v", p)
	}
}

// The log check does not wait behind housekeeping: a claim GC (or reconcile) pass waiting on a
// plugin that does not answer holds housekeeping for minutes, and a flooding plugin's log is
// kept under its limit meanwhile.
func TestAgentKeepsLogsBoundedWhileHousekeepingWaits(t *testing.T) {
	f := newFixture(t)
	f.releasingClaim().Hang(csi.RPCNodeUnpublishVolume)
	s := testSettings
	s.GCInterval = 10 * time.Millisecond // GC's first pass hangs in NodeUnpublishVolume before the first log check
	f.chattyLogBounded(s)
}

// chattyLogBounded runs an agent with s supervising plugin chatty, which floods its output
// before it serves, waits for the plugin to be healthy (its log past the limit by then) and
// for its log to be under the limit, stops the agent and returns the log's path.
func (f *fixture) chattyLogBounded(s Settings) string {
	f.t.Helper()
	f.register(f.execPlugin("chatty", "chatty"))
	stop := f.startAgent(s)
	waitFor(f.t, "the plugin to be healthy", func() bool { return f.plugin("chatty").Healthy })
	log := filepath.Join(f.dir, "logs", "chatty.log")
	waitFor(f.t, "the log to be kept under its limit", func() bool {
		st, err := os.Stat(log)
		return err == nil && st.Size() <= maxLogSize
	})
	if err := stop(); err != nil {
		f.t.Fatal(err)
	}
	return log
}

// A plugin flooding its output faster than the log check runs leaves a log far past the limit
// at the check: the rotated log keeps the newest maxLogSize of it, not all of it, or a flood of
// a gigabyte a second left a gigabyte in .log.1 at every check, the file system the store is
// on filling all the same.
func TestTrimLogKeepsTheRotatedLogBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.log")
	line := strings.Repeat("x", 1023) + "\n"
	// Made in one piece, not grown, and compared as bytes: under -race every copy of the
	// 30 MiB (a builder's growth, a conversion) is checked byte range by byte range, most of
	// this test's CPU.
	flood := bytes.Repeat([]byte(line), 3*int(maxLogSize)/len(line)+1)
	copy(flood[len(flood)-len(line):], "the newest line\n")
	flood = flood[:len(flood)-len(line)+len("the newest line\n")]
	if err := os.WriteFile(path, flood, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := trimLog(path); err != nil {
		t.Fatal(err)
	}
	rotated, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(rotated)) > maxLogSize+200 || !bytes.HasSuffix(rotated, []byte("x\nthe newest line\n")) {
		t.Errorf("the rotated log holds %d bytes ending %q, want at most about %d, the newest output", len(rotated), rotated[max(0, len(rotated)-20):], maxLogSize)
	}
	if !bytes.Contains(rotated[:200], []byte("bytes of earlier output dropped")) {
		t.Errorf("the rotated log does not say output was dropped: starts %q", rotated[:200])
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Errorf("the log after the rotation: %v, %v; want it emptied", st, err)
	}
}

// A command the kernel refuses to execute (no #! line, another architecture) fails the start,
// naming the reason, as one that does not exist does: not a process that exits at once.
func TestAgentReportsACommandThatCannotExecute(t *testing.T) {
	f := newFixture(t)
	bad := filepath.Join(f.dir, "not-a-program")
	if err := os.WriteFile(bad, []byte("not a program\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	f.register(spec.Plugin{ID: "bad", Type: spec.PluginMonolith, Socket: filepath.Join(f.dir, "bad.sock"),
		Exec: &spec.Exec{Command: bad}})
	stop := f.startAgent(testSettings)
	waitFor(t, "a start attempt", func() bool { return len(f.events("plugin-start")) >= 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if ev := f.events("plugin-start")[0]; !strings.Contains(ev, `plugin "bad" did not start: `) || !strings.Contains(ev, "exec format error") {
		t.Errorf("plugin-start events = %q, want the start to fail naming the reason", f.events("plugin-start"))
	}
	if _, err := os.Stat(filepath.Join(f.dir, "run", "bad.pid")); err == nil {
		t.Error("the pid file of a plugin that did not start is left")
	}
}

// A plugin that exits 0 at once, every time, is restarted after growing waits: its starts,
// and the events and log lines each one makes, stay few, not one per few milliseconds.
func TestAgentBacksOffAPluginThatExitsAtOnce(t *testing.T) {
	f := newFixture(t)
	// /bin/false, not this test binary in a mode that exits: its start under -race (the race
	// runtime and every package's init) took seconds on a loaded machine, and six such
	// cycles passed the wait for the cap; how the plugin exits is not what is checked. Not
	// /bin/true: a process that exits 0 may have left a daemon, which the agent waits for
	// (daemonOf) before each restart; one that fails is looked at once.
	sp := f.execPlugin("ex", "")
	sp.Exec.Command, sp.Exec.Args = "/bin/false", nil
	f.register(sp)
	s := testSettings
	s.BackoffMin, s.BackoffMax = 20*time.Millisecond, 400*time.Millisecond
	// The waits before each restart, on the agent's clock (which does not move here), recorded
	// and not waited out: before, the test waited them on the real clock and then counted the
	// starts in a second of it, three at most (agent39).
	var (
		mu    sync.Mutex
		waits []time.Duration
	)
	_, stop := f.startAgentWith(func(c *Config) {
		c.Settings, c.Observer = s, f.obs
		c.restartWait = func(ctx context.Context, d time.Duration) bool {
			if d > 0 {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
			}
			return ctx.Err() == nil
		}
	})
	recorded := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(waits)
	}
	waitFor(t, "seven restarts", func() bool { return len(recorded()) >= 7 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []time.Duration{20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 400 * ms, 400 * ms}
	if got := recorded()[:len(want)]; !slices.Equal(got, want) {
		t.Errorf("the waits before the restarts of a plugin that exits at once: %v; want %v (doubling from 20ms to the cap, 400ms)", got, want)
	}
	if exits := f.events("plugin-exit"); len(exits) < len(want) || !strings.Contains(exits[len(want)-1], "restarting it in 400ms") {
		t.Errorf("the plugin-exit events = %q, want the wait at its cap", exits)
	}
}

// A plugin that daemonises (a double fork with setsid, its process exiting 0) leaves the
// process group the agent made for it. The agent took the daemon for a plugin no agent started:
// it neither restarted it when it died nor stopped it at a clean stop. The agent, a child
// subreaper, finds the daemon serving the socket, records it and supervises it as the plugin.
func TestAgentSupervisesAPluginThatDaemonises(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("dm", "daemonizes"))
	stop := f.startAgent(testSettings)
	first := f.childPid("dm")
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("dm").Healthy })
	// The agent records the daemon in the pid file, then the event: wait for both.
	waitFor(t, "the pid file to name the daemon, and its event", func() bool {
		return f.pid("dm") == first && len(f.events("plugin-daemon")) > 0
	})
	if evs := f.events("plugin-daemon"); len(evs) != 1 || !strings.Contains(evs[0], fmt.Sprintf("supervising pid %d as the plugin", first)) {
		t.Errorf("plugin-daemon events = %q, want one naming pid %d", evs, first)
	}
	// Killed, it is the plugin's exit: the agent starts the plugin again, which daemonises again.
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var second int
	waitFor(t, "the daemon to be started again", func() bool {
		second = f.pid("dm")
		return second != 0 && second != first && alive(second) && f.plugin("dm").Healthy
	})
	t.Cleanup(func() { _ = syscall.Kill(second, syscall.SIGKILL) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(second) {
		t.Errorf("the plugin's daemon (pid %d) still runs after a clean stop of the agent (no mounts)", second)
	}
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's daemon for a foreign plugin:\n%s", logs)
	}
	if n := len(f.events("plugin-exit")); n != 1 {
		t.Errorf("%d plugin-exit events, want 1 (the daemon killed): %q", n, f.events("plugin-exit"))
	}
}

// A plugin whose process starts its server in a session of its own and stays running beside
// it: the agent supervises the process it started, and the server, outside that process's
// group, is not recorded. A clean stop of the agent with no mounts stops the server too (it
// carries the plugin's instance), not only the started process's group.
func TestAgentCleanStopStopsWhatThePluginLeftOutsideItsGroup(t *testing.T) {
	f := newFixture(t)
	stop, server := f.startDaemonising("daemonizes-stays")
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("dm").Healthy })
	stopThenGone(t, stop, server, "the plugin's server, in a session of its own,")
}

// startDaemonising registers plugin dm, a test plugin in a daemonising mode, starts an agent,
// and returns its stop and the pid of the server the plugin started. Whatever the plugin's
// processes left is killed when the test ends (a defect the test finds could leave daemons).
func (f *fixture) startDaemonising(mode string) (stop func() error, server int) {
	sp := f.execPlugin("dm", mode)
	f.t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + sp.Exec.Env.Plain()[pluginRootEnv]) })
	f.register(sp)
	stop = f.startAgent(testSettings)
	return stop, f.childPid("dm")
}

// daemonFollowed waits for the agent to record plugin dm's daemon in its pid file, then its
// plugin-daemon event, and checks that there is one, naming the daemon.
func (f *fixture) daemonFollowed(daemon int) {
	f.t.Helper()
	waitFor(f.t, "the agent to record the daemon", func() bool {
		return f.pid("dm") == daemon && len(f.events("plugin-daemon")) > 0
	})
	if evs := f.events("plugin-daemon"); len(evs) != 1 || !strings.Contains(evs[0], fmt.Sprintf("supervising pid %d as the plugin", daemon)) {
		f.t.Errorf("plugin-daemon events = %q, want one naming pid %d", evs, daemon)
	}
}

// stopThenGone stops the agent cleanly (no mounts) and checks that pid, what it names, no
// longer runs.
func stopThenGone(t *testing.T, stop func() error, pid int, what string) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("%s (pid %d) still runs after a clean stop of the agent (no mounts)", what, pid)
	}
}

// A daemon that binds its socket later than the probe interval after the plugin's process
// exited (a slow start, a loaded machine) is still the plugin's: the agent took the exit for
// the plugin's end, started the plugin again beside the daemon, and took the daemon, once it
// served the socket, for a plugin no agent started, which a clean stop left running. While a
// process carrying the plugin's instance runs, the agent waits for it to serve the socket.
func TestAgentFollowsADaemonThatBindsLate(t *testing.T) {
	f := newFixture(t)
	stop, daemon := f.startDaemonising("daemonizes-late")
	f.daemonFollowed(daemon)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(daemon) {
		t.Errorf("the plugin's daemon (pid %d) still runs after a clean stop of the agent (no mounts)", daemon)
	}
	if n := len(f.events("plugin-start")); n != 1 {
		t.Errorf("%d plugin-start events, want 1: %q", n, f.events("plugin-start"))
	}
	if evs := f.events("plugin-exit"); len(evs) != 0 {
		t.Errorf("plugin-exit events = %q, want none: the daemon is the plugin", evs)
	}
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's daemon for a foreign plugin:\n%s", logs)
	}
}

// Plugin IDs registered on one socket are one process (docs/architecture.md, Lock order). Two
// of them with exec blocks made the agent start two processes for the socket, both binding
// it: one process runs for the socket, under the first ID, and serves both.
func TestAgentRunsOneProcessForPluginIDsOnOneSocket(t *testing.T) {
	f := newFixture(t)
	a := f.execPlugin("a", "hostpath")
	b := a
	b.ID = "b"
	f.register(a)
	f.register(b)
	rec := &recorder{}
	f.obs = rec
	stop := f.startAgent(testSettings)
	waitFor(t, "both plugin IDs to be healthy", func() bool { return f.plugin("a").Healthy && f.plugin("b").Healthy })
	// Time for a second start, or a restart, to show: five more probes of each ID by the
	// agent's own loops, not a span of the wall clock, which on a loaded machine held none.
	probes := func(id string) int {
		return len(slices.DeleteFunc(rec.list(), func(e string) bool { return !strings.HasPrefix(e, "probed "+id+" ") }))
	}
	fromA, fromB := probes("a"), probes("b")
	waitFor(t, "five more probes of each plugin ID", func() bool { return probes("a") >= fromA+5 && probes("b") >= fromB+5 })
	pid := f.pid("a")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if starts := f.events("plugin-start"); len(starts) != 1 {
		t.Errorf("plugin-start events = %q, want one process started for the socket", starts)
	}
	if f.pid("b") != 0 {
		t.Errorf("a pid file for plugin b, whose socket plugin a's process serves")
	}
	if alive(pid) {
		t.Errorf("the plugins' process (pid %d) still runs after a clean stop", pid)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "one process serves both") {
		t.Errorf("the log does not say that one process serves both IDs:\n%s", logs)
	}
}

// Two plugins declared on one socket with different exec blocks cannot both run: one process
// serves a socket. The agent refuses such a config, naming both, rather than run one of the
// commands of its own choosing.
func TestAgentRefusesADeclaredSocketWithTwoCommands(t *testing.T) {
	f := newFixture(t)
	a := f.execPlugin("a", "hostpath")
	b := f.execPlugin("b", "hostpath") // another root in its env: another exec block
	b.Socket = a.Socket
	stop := f.startAgent(testSettings, a, b)
	err := stop() // Run refuses the config before it looks at its context

	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(fmt.Sprint(err), `plugins "a" and "b" are declared on one socket with different exec blocks`) {
		t.Errorf("Run = %v, want the config refused naming both plugins", err)
	}
}

// runUntilRestarted registers plugin id, the test plugin in mode, which never becomes healthy,
// starts an agent on a clock the test moves, and moves it until the agent restarts the plugin
// past its health timeout. The clock moves only once a probe has recorded the error probed
// (unless it is empty): the restart then says why as the test expects, however long the plugin's
// process took to get there (on a loaded machine, it had not made its socket when the test's
// clock was 7s on). It returns the plugin, the agent's stop, and the pid of its first process.
// adjust, if given, changes the plugin before it is registered.
func (f *fixture) runUntilRestarted(id, mode, probed string, adjust ...func(*spec.Plugin)) (sp spec.Plugin, stop func() error, first int) {
	f.t.Helper()
	clock := &fakeClock{t: time.Now()}
	f.now = clock.Now
	sp = f.execPlugin(id, mode)
	for _, a := range adjust {
		a(&sp)
	}
	f.register(sp)
	stop = f.startAgent(testSettings)
	waitFor(f.t, "the plugin to be started", func() bool { return alive(f.pid(id)) })
	first = f.pid(id)
	if probed != "" {
		waitFor(f.t, "a probe to find the plugin "+probed, func() bool { return strings.Contains(f.plugin(id).LastError, probed) })
	}
	waitFor(f.t, "the restart past the health timeout", func() bool {
		clock.Advance(time.Second)
		return len(f.events("plugin-restart")) > 0
	})
	return sp, stop, first
}

// A plugin whose process runs but never makes its socket is restarted past the health timeout,
// and the restart says so: not the engine's "is the plugin running?", which the agent, having
// its process, can answer.
func TestAgentSaysAPluginRunsWithoutItsSocket(t *testing.T) {
	f := newFixture(t)
	sp, stop, pid := f.runUntilRestarted("ns", "nosocket", "")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("its process (pid %d) runs but has not made its socket %s", pid, sp.Socket)
	if ev := f.events("plugin-restart")[0]; !strings.Contains(ev, want) || strings.Contains(ev, "is the plugin running?") {
		t.Errorf("plugin-restart event = %q, want it to say %q", ev, want)
	}
}

// The same, the socket's path holding an escape sequence (a directory named so): the restart
// names the socket quoted, as every other message names a socket (spec.QuoteName), not raw,
// where the escape would recolour the terminal of whoever reads the event or the log.
func TestAgentQuotesTheSocketAPluginHasNotMade(t *testing.T) {
	f := newFixture(t)
	sp, stop, pid := f.runUntilRestarted("ns", "nosocket", "", func(sp *spec.Plugin) {
		sp.Socket = filepath.Join(f.dir, "sock\x1b[31mets", "ns.sock")
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("its process (pid %d) runs but has not made its socket %s", pid, spec.QuoteName(sp.Socket))
	if ev := f.events("plugin-restart")[0]; !strings.Contains(ev, want) {
		t.Errorf("plugin-restart event = %q, want it to say %q", ev, want)
	}
}

// A plugin whose socket accepts connections but never answers is probed within the probe's
// timeout, restarted past the health timeout, and stopped at a clean stop: no step of the
// agent waits on it without a bound.
func TestAgentRestartsAPluginThatNeverAnswers(t *testing.T) {
	f := newFixture(t)
	_, stop, first := f.runUntilRestarted("mute", "mute", "did not complete the gRPC handshake")
	waitFor(t, "the plugin to be started again", func() bool { p := f.pid("mute"); return p != first && alive(p) })
	second := f.pid("mute")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent's stop waited 20s on a plugin that never answers")
	}
	if alive(first) || alive(second) {
		t.Errorf("after a clean stop: the first process %d alive %v, the second %d alive %v", first, alive(first), second, alive(second))
	}
	if ev := f.events("plugin-restart")[0]; !strings.Contains(ev, "did not complete the gRPC handshake") {
		t.Errorf("plugin-restart event = %q, want it to say the socket accepted but did not answer", ev)
	}
}

// A pid file that cannot be written (the file system is full) fails the plugin's start: the
// plugin does not run unrecorded, the start is retried and says why, and once there is room
// the plugin starts, recorded, and is stopped at a clean stop.
func TestAgentStartsNoPluginItCannotRecordOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs as the run directory needs root")
	}
	f := newFixture(t)
	run := filepath.Join(f.dir, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", run, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(run, syscall.MNT_DETACH) })
	stop := f.startAgent(testSettings)
	waitFor(t, "the agent's pid file", func() bool { _, err := os.Stat(filepath.Join(run, "agent.pid")); return err == nil })
	filler := filepath.Join(run, "filler")
	fl, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = fl.Write(make([]byte, 4096))
	}
	fl.Close()
	sp := f.execPlugin("full", "hostpath")
	f.register(sp)
	failed := func() int {
		n := 0
		for _, ev := range f.events("plugin-start") {
			if strings.Contains(ev, "did not start") && strings.Contains(ev, "no space left on device") {
				n++
			}
		}
		return n
	}
	waitFor(t, "a start that fails for want of room", func() bool { return failed() > 0 })
	// The failed start waits for its process to end before it says so: by the event, nothing
	// carrying the plugin's environment runs (a plugin started unrecorded, or the start helper
	// let go), which says at once what a wait of the wall clock for its socket said. The start
	// is retried within milliseconds, and what runs now may be the next attempt's, still
	// starting: each process found must be gone once the next attempt has failed too.
	n, pids := failed(), pidsWithEnv(pluginRootEnv+"="+sp.Exec.Env.Plain()[pluginRootEnv])
	waitFor(t, "the next start to fail too", func() bool { return failed() > n })
	if left := slices.DeleteFunc(pids, func(pid int) bool { return !alive(pid) }); len(left) > 0 || socketsLive([]string{sp.Socket}) {
		t.Fatalf("a plugin runs (pids %v) or serves on %s though its pid file could not be written", left, sp.Socket)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to start once there is room", func() bool { return alive(f.pid("full")) && f.plugin("full").Healthy })
	stopThenGone(t, stop, f.pid("full"), "the plugin")
}

// An agent killed after a plugin's process exited, leaving its daemon serving the socket, and
// before it recorded the daemon, left a pid file naming the exited process: the next agent took
// the daemon for a plugin no agent started, and never stopped it. The daemon carries the
// plugin's instance in its environment, which the pid file records: the next agent adopts it.
func TestAgentKilledBeforeRecordingADaemonLeavesItAdoptable(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("dm", "daemonizes")
	f.register(sp)
	f.runAgentKilledAt("agent-killed-while-daemonising")
	daemon := f.childPid("dm")
	stop := f.startAgent(testSettings)
	// The killed agent may have probed the plugin healthy already: its stored health says
	// nothing of the next agent, whose adoption is what to wait for.
	adopted := fmt.Sprintf("adopted pid %d, the daemon its process left", daemon)
	waitFor(t, "the next agent to adopt the daemon", func() bool {
		return slices.ContainsFunc(f.events("plugin-daemon"), func(ev string) bool { return strings.Contains(ev, adopted) })
	})
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("dm").Healthy })
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the next agent took the plugin's daemon for a foreign plugin:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(daemon) {
		t.Errorf("the plugin's daemon (pid %d) still runs after a clean stop of the next agent (no mounts)", daemon)
	}
}

// runAgentKilledAt runs an agent on the fixture's state dir in another process, the test
// binary in mode, which kills itself with SIGKILL at its failpoint.
func (f *fixture) runAgentKilledAt(mode string) {
	f.t.Helper()
	self, err := os.Executable()
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), pluginModeEnv+"="+mode, pluginRootEnv+"="+f.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		f.t.Fatalf("the agent was not killed at its failpoint: %v\n%s", err, out)
	}
}

// An idle agent does not scan /proc for orphans to reap every second (reapOrphans reads every
// process's stat, thousands on a busy host): it reaps when a SIGCHLD says a child exited, and
// every reapInterval. An orphan that exits is still reaped at once.
func TestIdleAgentDoesNotScanForOrphans(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("hp", "hostpath"))
	stop := f.startAgent(testSettings)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	if !subreaper {
		t.Skipf("the agent could not make itself a child subreaper (%v): it reaps nothing", subreaperErr)
	}
	// Three of the agent's own log checks, each a second on a real agent, not three of the
	// wall clock's intervals, which on a loaded machine held fewer (or none) of them.
	before, ticks := reapScans.Load(), logChecks.Load()
	waitFor(t, "three more of the agent's log checks", func() bool { return logChecks.Load() >= ticks+3 })
	if n := reapScans.Load() - before; n > 1 {
		t.Errorf("an idle agent scanned for orphans %d times in three of its log checks, want at most once", n)
	}
	// An orphan re-parented to the agent (outside its group, as a plugin's daemon is) that
	// exits is reaped on its SIGCHLD, long before reapInterval. To the agent, such an orphan is
	// a child of its process in a group of its own that no exec.Cmd of the agent owns: this
	// one, whose Wait nobody calls. (A shell started in a group of its own to leave a real
	// orphan behind was such a child itself, and the agent reaped the shell before the test's
	// own Wait could: "waitid: no child processes". Code in the agent's process that waits
	// for its children leaves them in the agent's group, which the agent never reaps.)
	cmd := exec.Command("sleep", "0.3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	orphan := cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := procStat(orphan); err != nil {
			break // exited and reaped: gone from /proc
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan (pid %d) was not reaped within 5 s of its exit", orphan)
		}
	}
}

// A plugin the agent starts gets none of the agent's environment but the host's conventions
// (PATH, HOME, the locale, the time zone): not the operator's Nomad ACL token, a cloud
// credential or systemd's notify socket, which were given to the agent, not to a plugin that
// is often a third party's program. Its exec block's env and CSI_ENDPOINT it does get.
func TestPluginGetsNoneOfTheAgentsSecrets(t *testing.T) {
	secrets := map[string]string{
		"NOMAD_TOKEN":           "nomad-acl-token-secret",
		"NOMAD_CLIENT_KEY":      "/etc/nomad.d/client-key.pem",
		"VAULT_TOKEN":           "vault-token-secret",
		"AWS_SECRET_ACCESS_KEY": "aws-secret-key",
		"SSH_AUTH_SOCK":         "/tmp/ssh-agent.sock",
		"NOTIFY_SOCKET":         "/run/systemd/notify",
		"VOLCTL_LOG":            "debug",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_TIME", "C")
	t.Setenv("TZ", "UTC")
	dir := t.TempDir()
	dump := filepath.Join(dir, "env")
	sp := spec.Plugin{ID: "p", Socket: filepath.Join(dir, "p.sock"), Exec: &spec.Exec{
		Command: "/bin/sh", Args: []string{"-c", `env > "$0"`, dump},
		Env: spec.Secrets{"AWS_REGION": "eu-west-1", "TZ": "Europe/Paris"},
	}}
	p, err := startProcess(sp, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !p.wait(30 * time.Second) {
		t.Fatal("the plugin that dumps its environment did not exit")
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for k := range secrets {
		if v, ok := got[k]; ok {
			t.Errorf("the plugin got the agent's %s=%s", k, v)
		}
	}
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "LANG": "C.UTF-8", "LC_TIME": "C", "TZ": "Europe/Paris",
		"AWS_REGION": "eu-west-1", spec.EndpointEnv: "unix://" + sp.Socket,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the plugin's %s = %q, want %q", k, got[k], v)
		}
	}
	if got[instanceEnv] == "" || got[startHelperEnv] != "" {
		t.Errorf("the plugin's %s = %q and %s = %q, want its instance and not the start helper's mark",
			instanceEnv, got[instanceEnv], startHelperEnv, got[startHelperEnv])
	}
}

// startLeft starts the test binary as mode, in a session of its own with instance in its
// environment, as a plugin's process leaves a daemon, listening on socket; it returns once the
// process says it is ready and answers there.
func startLeft(t *testing.T, mode, instance, socket string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), pluginModeEnv+"="+mode, instanceEnv+"="+instance, "CSI_ENDPOINT="+socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("%s did not get ready: %q, %v", mode, line, err)
	}
	waitFor(t, mode+" to answer on its socket", func() bool { return socketsLive([]string{socket}) })
	return cmd.Process.Pid
}

// What a plugin left outside its process group has ended, its socket closed, by the time
// stopLeft returns, so that the restart that follows at once finds the socket free, never live
// and taken for a plugin no agent started:
//   - "heavy-ignores-term" ignores SIGTERM: SIGKILL ends it, and the kernel ends a killed
//     process a while after kill(2) returns, tearing its memory (256 MiB written) down before
//     it closes its files, while /proc already shows its first thread a zombie;
//   - "first-thread-exits" ends its first thread alone: /proc shows it a zombie while its other
//     threads serve the socket, and a look at the first thread alone passed it over.
func TestStopLeftReturnsOnceWhatItStoppedHasEnded(t *testing.T) {
	for _, mode := range []string{"heavy-ignores-term", "first-thread-exits"} {
		t.Run(mode, func(t *testing.T) {
			instance := newInstance()
			socket := filepath.Join(t.TempDir(), "left.sock")
			pid := startLeft(t, mode, instance, socket)
			if _, live := procGroup(pid); !live {
				t.Errorf("pid %d, serving %s, is taken for ended", pid, socket)
			}
			if got := stopLeft(instance, 10*time.Millisecond); !slices.Equal(got, []int{pid}) {
				t.Errorf("stopLeft found %v, want [%d]", got, pid)
			}
			_, live := procGroup(pid)
			if served := socketsLive([]string{socket}); live || served {
				t.Errorf("stopLeft returned while the process it stopped (pid %d) still ran (%v) or its socket still answered (%v)", pid, live, served)
			}
		})
	}
}

// A plugin's daemon whose first thread has exited (a C daemon whose main calls pthread_exit)
// holds the socket it serves, but /proc/<pid>/fd of such a process lists no descriptor: the
// look for the process holding a socket passed it over, so the agent took a daemonised
// plugin's daemon for none (daemonOf, adoptDaemon) and a log line named no server. Its
// descriptors are read through a thread that runs.
func TestSocketHolderWhoseFirstThreadExited(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "held.sock")
	pid := startLeft(t, "first-thread-exits", newInstance(), socket)
	waitFor(t, "its first thread to exit", func() bool {
		f, err := procStat(pid)
		return err == nil && len(f) > 0 && f[0] == "Z"
	})
	// The listener itself, and a daemon found among the plugin's processes when the pid
	// SO_PEERCRED names (here this process) holds the socket no more.
	for _, peer := range []int{pid, os.Getpid()} {
		if got, seen := holderOf(socket, peer, func(p int) bool { return p == pid }); got != pid || !seen {
			t.Errorf("holder of %s with peer %d: pid %d (seen %v), want %d, whose first thread exited, seen holding it", socket, peer, got, seen, pid)
		}
	}
}

// The agent inherits whatever descriptors its starter left open without close-on-exec (a
// shell's, sudo's, a CI runner's, a service wrapper's: here a file of secrets), and Go's exec
// passes every such one on. A plugin, a third party's program, must get its stdin, stdout and
// stderr only, not the agent's inheritance: a descriptor of a file it could not open itself
// reads it as the agent's starter could.
func TestPluginInheritsNoDescriptorOfTheAgents(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secrets.env")
	if err := os.WriteFile(secret, []byte("TOKEN=s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // no O_CLOEXEC: as a starter left it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	dump := filepath.Join(dir, "fds")
	sp := spec.Plugin{ID: "p", Socket: filepath.Join(dir, "p.sock"), Exec: &spec.Exec{
		Command: "/bin/sh", Args: []string{"-c", `for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink "$f")"; done > "$0"`, dump},
	}}
	p, err := startProcess(sp, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !p.wait(30 * time.Second) {
		t.Fatal("the plugin that lists its descriptors did not exit")
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the plugin holds descriptor %d of the agent's, open on %s:\n%s", fd, secret, b)
	}
}

// TestPluginPATHHoldsNoDirectoryAnotherUserControls: the plugin runs as the agent's user, root
// most often, and what it runs by name (mount, mkfs, its helpers) is looked up in its PATH. A
// directory of the agent's PATH that other users may write, or a relative one (searched from
// the plugin's working directory), is left out of the plugin's, each named in the plugin's log
// with why. Before, the plugin got the agent's PATH whole.
func TestPluginPATHHoldsNoDirectoryAnotherUserControls(t *testing.T) {
	dir := t.TempDir()
	open := openDir(t, dir)
	t.Setenv("PATH", open+"::/usr/bin:/bin")
	dump := filepath.Join(dir, "path")
	sp := spec.Plugin{ID: "p", Socket: filepath.Join(dir, "p.sock"), Exec: &spec.Exec{
		Command: "/bin/sh", Args: []string{"-c", `printf %s "$PATH" > "$0"`, dump},
	}}
	if got := pluginWrites(t, sp, dir, dump); got != "/usr/bin:/bin" {
		t.Errorf("the plugin's PATH = %q, want %q: %s is writable by every user and the empty entry is the working directory", got, "/usr/bin:/bin", open)
	}
	log, err := os.ReadFile(filepath.Join(dir, "p.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"left " + open + " out of the plugin's PATH: it is writable by other users (mode 0777)", "left . out of the plugin's PATH: it is relative"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the plugin's log does not say %q:\n%s", want, log)
		}
	}
}

// TestPluginGetsNoEmptyPATH: PATH set empty (the agent's, or `env { PATH = "" }` in an exec
// block) is execvp's working directory alone, as "." is; it passed the filter whole (a list of
// no directories), and the plugin, running as root, searched whatever directory it ran in for
// mount and the rest. Left out as "." is, named in the log; the plugin gets /bin:/usr/bin.
func TestPluginGetsNoEmptyPATH(t *testing.T) {
	for _, c := range []struct {
		name string
		env  spec.Secrets
	}{{"the agent's", nil}, {"the exec block's", spec.Secrets{"PATH": ""}}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.env == nil {
				t.Setenv("PATH", "")
			}
			dump := filepath.Join(dir, "path")
			sp := spec.Plugin{ID: "p", Socket: filepath.Join(dir, "p.sock"), Exec: &spec.Exec{
				Command: "/bin/sh", Args: []string{"-c", `printf %s "${PATH-unset}" > "$0"`, dump}, Env: c.env,
			}}
			got := pluginWrites(t, sp, dir, dump)
			log, _ := os.ReadFile(filepath.Join(dir, "p.log"))
			if got != pathtrust.DefaultExecPath {
				t.Errorf("the plugin's PATH, %s set empty, = %q, want %q (empty, execvp searches the working directory)\nlog:\n%s", c.name, got, pathtrust.DefaultExecPath, log)
			}
			if want := "left . out of the plugin's PATH: it is relative"; !strings.Contains(string(log), want) {
				t.Errorf("the plugin's log does not say %q:\n%s", want, log)
			}
		})
	}
}

// TestEnvScriptIsCheckedOnThePATHThePluginGets: a #!/usr/bin/env script whose interpreter the
// agent's PATH finds after a directory any user may write. That directory is left out of the
// plugin's PATH, so env never searches it; the start was refused all the same, the check run on
// the PATH before the filter, its error saying the plugin's PATH searches that directory first.
func TestEnvScriptIsCheckedOnThePATHThePluginGets(t *testing.T) {
	dir := t.TempDir()
	open := openDir(t, dir)
	t.Setenv("PATH", open+":/usr/bin:/bin")
	dump := filepath.Join(dir, "path")
	script := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env sh\nprintf %s \"$PATH\" > "+dump+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := spec.Plugin{ID: "p", Socket: filepath.Join(dir, "p.sock"), Exec: &spec.Exec{Command: script}}
	if err := UntrustedCommand(sp); err != nil {
		t.Errorf("plugin register would warn: %v", err)
	}
	if got := pluginWrites(t, sp, dir, dump); got != "/usr/bin:/bin" {
		t.Errorf("the plugin's PATH = %q, want /usr/bin:/bin", got)
	}
}

// openDir makes dir/open, a directory every user may write (not sticky).
func openDir(t *testing.T, dir string) string {
	t.Helper()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	return open
}

// pluginWrites starts the plugin sp, in dir, which writes something (its PATH) to dump and
// exits, and returns what it wrote.
func pluginWrites(t *testing.T, sp spec.Plugin, dir, dump string) string {
	t.Helper()
	p, err := startProcess(sp, dir, dir)
	if err != nil {
		t.Fatalf("start refused: %v", err)
	}
	if !p.wait(30 * time.Second) {
		t.Fatal("the plugin that writes its PATH did not exit")
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
