package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// leftDaemon runs plugin id's command in mode by hand, as an agent would have (its instance in
// its environment), waits for a daemon outside the started process's group to serve the socket,
// and records that daemon in the pid file as the agent that followed it did (daemonProcess,
// writePidFile): a daemon an agent left running, for the next one to adopt. It returns the
// plugin, the daemon's pid, and the pids of every process left with the plugin's root in its
// environment.
func (f *fixture) leftDaemon(id, mode string) (sp spec.Plugin, daemon int, left []int) {
	f.t.Helper()
	sp = f.execPlugin(id, mode)
	root := sp.Exec.Env.Plain()[pluginRootEnv]
	f.t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + root) })
	instance := newInstance()
	f.runByHand(sp, instanceEnv+"="+instance)
	waitFor(f.t, "the daemon to serve the socket", func() bool { return socketsLive([]string{sp.Socket}) })
	daemon = socketServer(sp.Socket, nil)
	pgrp, live := procGroup(daemon)
	if !live || pgrp == daemon {
		f.t.Fatalf("the daemon (pid %d, group %d, live %v) leads its group: not the case under test", daemon, pgrp, live)
	}
	d := daemonProcess(f.ctx, daemon, pgrp, instance)
	if d == nil {
		f.t.Fatalf("the daemon (pid %d) exited", daemon)
	}
	run := filepath.Join(f.dir, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := writePidFile(run, id, d); err != nil {
		f.t.Fatal(err)
	}
	waitFor(f.t, "the daemon's helper", func() bool { left = pidsWithEnv(pluginRootEnv + "=" + root); return len(left) >= 2 })
	return sp, daemon, left
}

// runByHand runs plugin sp's command to its end, by hand (not by an agent), in a process group
// of its own, with env added to the plugin's environment; it returns the process's pid.
func (f *fixture) runByHand(sp spec.Plugin, env ...string) int {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(sp.Socket), 0o700); err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(sp.Exec.Command, sp.Exec.Args...)
	cmd.Env = append(pluginEnv(os.Environ(), sp), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Its output to a file, as the agent's: a pipe would stay open in a daemon, and Run wait on it.
	log, err := os.Create(filepath.Join(f.dir, sp.ID+"-by-hand.log"))
	if err != nil {
		f.t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(log.Name())
		f.t.Fatalf("the plugin's process: %v\n%s", err, out)
	}
	return cmd.Process.Pid
}

// A daemon that does not lead its process group (its group's leader, the fork that made the
// session, exited) shares the group with what it forked: here a helper that runs with an
// environment of its own, without the plugin's instance. Its pid file named the daemon only:
// the agent that followed it knew the group, but a later agent adopting it did not, and when
// the daemon died it stopped nothing of its group, and the helper ran on, unsupervised,
// through the restart and the clean stop (whose sweeps look for the instance). The pid file
// records the group.
func TestAdoptedDaemonIsStoppedWithItsGroup(t *testing.T) {
	f := newFixture(t)
	sp, daemon, left := f.leftDaemon("dm", "daemonizes-helper")
	f.register(sp)
	stop := f.startAgent(testSettings)
	waitFor(t, "the agent to adopt the daemon", func() bool { return strings.Contains(f.logs.String(), "adopted the running plugin") })
	if got := f.pid("dm"); got != daemon {
		t.Fatalf("pid file names %d, want the daemon %d", got, daemon)
	}
	if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin's exit to be seen", func() bool { return len(f.events("plugin-exit")) > 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range left {
		if alive(pid) {
			t.Errorf("pid %d, in the adopted daemon's (pid %d) process group, still runs after a clean stop of the agent (no mounts)", pid, daemon)
		}
	}
}

// A pid file as an older agent wrote it, without the group (or without the instance), reads as
// it did: the process alone, its pid its group.
func TestPidFileWithoutGroupReadsAsBefore(t *testing.T) {
	run := t.TempDir()
	for _, tc := range []struct{ text, instance string }{
		{"123 456\n", ""},
		{"123 456 abc\n", "abc"},
	} {
		if err := os.WriteFile(pidFilePath(run, "p"), []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		p := readPidFile(run, "p")
		if p == nil || p.pid != 123 || p.startTick != 456 || p.instance != tc.instance || p.pgid != 0 || p.group() != 123 {
			t.Errorf("pid file %q read as %+v, want pid 123, start 456, instance %q, its own group", tc.text, p, tc.instance)
		}
	}
	// And what this agent writes reads back, with or without an instance and a group.
	for _, w := range []*process{{pid: 7, startTick: 8}, {pid: 7, startTick: 8, pgid: 6}, {pid: 7, startTick: 8, instance: "x", pgid: 6}} {
		if err := writePidFile(run, "p", w); err != nil {
			t.Fatal(err)
		}
		p := readPidFile(run, "p")
		if p == nil || p.pid != w.pid || p.startTick != w.startTick || p.instance != w.instance || p.pgid != w.pgid {
			t.Errorf("pid file written for %+v read back as %+v", w, p)
		}
	}
}

// A plugin that binds its socket, then daemonises, handing the listening socket to its daemon
// (as a server that listens before it forks does): SO_PEERCRED names the process that called
// listen(), which has exited. The agent found no daemon, started the plugin again, and took
// the daemon for a plugin no agent started, never stopped. The socket's holder is found by its
// descriptors, among the plugin's processes.
func TestAgentFollowsADaemonThatInheritedItsSocket(t *testing.T) {
	f := newFixture(t)
	stop, daemon := f.startDaemonising("listens-then-daemonises")
	f.daemonFollowed(daemon)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("dm").Healthy })
	stopThenGone(t, stop, daemon, "the plugin's daemon")
	if n := len(f.events("plugin-start")); n != 1 {
		t.Errorf("%d plugin-start events, want 1: %q", n, f.events("plugin-start"))
	}
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's daemon for a foreign plugin:\n%s", logs)
	}
}

// A pid file that names a process the agent cannot prove is its plugin (edited, or restored
// from another boot, where the pid and start time may well be another program's) must not get
// that process signalled: the agent adopted any process with the recorded pid and start time,
// stopped it past the health timeout (it serves no socket) and at a clean stop. A pid file
// that records an instance is the agent's only when its process carries that instance in its
// environment, as every process the agent starts does.
func TestAgentNeverSignalsAProcessItsPidFileCannotProveIsThePlugin(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	cmd := exec.Command("sleep", "600") // an unrelated process, leading its group
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	other := cmd.Process.Pid
	tick, err := procStartTick(other)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(f.dir, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writePidFile(run, "hp", &process{pid: other, startTick: tick, instance: newInstance()}); err != nil {
		t.Fatal(err)
	}
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(other) {
		t.Fatalf("the agent signalled pid %d, which its pid file named but which does not carry the recorded instance", other)
	}
	if logs := f.logs.String(); !strings.Contains(logs, fmt.Sprintf("pid %d", other)) || strings.Contains(logs, "adopted the running plugin") {
		t.Errorf("the agent's log does not say it left pid %d alone, or says it adopted it:\n%s", other, logs)
	}
}

// sharedSocketUnderMounts registers plugins a and b on one socket, a with an exec block (the
// test plugin, mounting for real) and b with the same one or, without bExec, none; starts an
// agent, claims a volume of b, and deregisters a. It returns the agent's stop, the engine the
// claim was made with (a command's), and the pid of the socket's process, a's.
func (f *fixture) sharedSocketUnderMounts(bExec bool) (stop func() error, cmd *engine.Engine, pid int) {
	t := f.t
	t.Helper()
	f.mountsForReal()
	a := f.execPlugin("a", "sickens")
	b := a
	b.ID = "b"
	if !bExec {
		b.Exec = nil
	}
	f.register(a)
	stop = f.startAgent(testSettings)
	waitFor(t, "plugin a to be healthy", func() bool { return f.plugin("a").Healthy })
	f.register(b) // without an exec block, on a socket that must answer
	waitFor(t, "both plugin IDs to be healthy", func() bool { return f.plugin("a").Healthy && f.plugin("b").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "b", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	cmd = f.claimAsCommand()
	pid = f.pid("a")
	if err := cmd.DeregisterPlugin(f.ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	return stop, cmd, pid
}

// Two plugin IDs on one socket are one process, run by the first ID's exec block. Deregistering
// that ID while the other has mounts counted the deregistered ID's mounts, none, and stopped
// the process serving the other's mounts (the other's runner then started a new one, which
// knew nothing of them). The process is handed to the ID registered on its socket with an
// exec block: its runner adopts it, recorded under its name, without a restart.
func TestDeregisteringThePluginIDRunningASocketsProcessHandsItToTheOther(t *testing.T) {
	f := newFixture(t)
	stop, cmd, pid := f.sharedSocketUnderMounts(true)
	// The event follows the pid file: once it is recorded, the hand-over is done.
	waitFor(t, "the agent to hand plugin a's process over, or plugin b's runner to take another way", func() bool {
		logs := f.logs.String()
		return len(f.events("plugin-handover")) > 0 || strings.Contains(logs, "no volctl agent started it") || strings.Contains(logs, "started plugin\" plugin=b")
	})
	waitFor(t, "plugin b to be healthy", func() bool { return f.plugin("b").Healthy })
	if got := f.pid("b"); got != pid || !alive(pid) {
		t.Errorf("plugin b's pid file names %d (alive %v), want the socket's process %d (alive %v), handed to it", got, alive(got), pid, alive(pid))
	}
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") || strings.Contains(logs, "started plugin\" plugin=b") {
		t.Errorf("plugin b probes a process nobody supervises, or started another:\n%s", logs)
	}
	if evs := f.events("plugin-handover"); len(evs) != 1 || !strings.Contains(evs[0], fmt.Sprintf(`plugin "a" deregistered: its process (pid %d)`, pid)) {
		t.Errorf("plugin-handover events = %q", evs)
	}
	// The process runs with a's exec env: its values, kept as secrets at a's deregistration,
	// are b's to keep now. Left as a's, the next agent's start let them go (a has no pid file)
	// while the process ran on, echoing them unscrubbed.
	if gone, err := f.e.ExecEnvKeptOfGone(f.ctx); err != nil || len(gone) != 0 {
		t.Errorf("after the hand-over, env values kept of deregistered plugins %q (%v); want a's kept as b's", gone, err)
	}
	if redact, err := f.e.Redactor(f.ctx); err != nil || redact(filepath.Join(f.dir, "hostpath-a")) == filepath.Join(f.dir, "hostpath-a") {
		t.Errorf("after the hand-over, plugin a's env value (its root) is no secret the state keeps (%v)", err)
	}
	if t.Failed() {
		return
	}
	// Supervised as b's: released, it is stopped at the agent's clean stop.
	waitFor(t, "plugin b's runner to adopt the process", func() bool {
		return strings.Contains(f.logs.String(), `adopted the running plugin" plugin=b`)
	})
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	stopThenGone(t, stop, pid, "the socket's process, handed to plugin b,")
}

// As above, with the other ID on the socket probed only (no exec block): nothing can take the
// process over, and it is counted as the socket's, whose mounts keep it running, with a
// warning naming the ID left without a supervisor; it was stopped under them.
func TestDeregisteringThePluginIDRunningASocketsProcessLeavesItUnderTheOthersMounts(t *testing.T) {
	f := newFixture(t)
	stop, cmd, pid := f.sharedSocketUnderMounts(false)
	want := fmt.Sprintf(`its process (pid %d) serves plugin \"b\" on the same socket, which has no exec block`, pid)
	waitFor(t, "the agent to give up plugin a", func() bool {
		logs := f.logs.String()
		return strings.Contains(logs, want) || strings.Contains(logs, `stopping plugin" plugin=a`)
	})
	if !alive(pid) {
		t.Fatalf("the socket's process (pid %d) was stopped under plugin b's mounts", pid)
	}
	// Plugin b had plugin a's record of the process (agent39): it says now that the process
	// was left running, nothing supervising it, and that b's exec block would change that. The
	// agent records "left" twice, a moment apart: first as the socket's process kept under its
	// mounts, then with the handover's words; the second is the one looked for.
	waitFor(t, "plugin b's supervision to say its process was left, naming b's exec block", func() bool {
		s := f.plugin("b").Supervision
		return s != nil && s.Mode == engine.SupervisionLeft && strings.Contains(s.Note, `give "b" the exec block`)
	})
	if p := f.plugin("b"); p.Supervised || p.Supervision.Pid != pid || p.Supervision.CanStop || !strings.Contains(p.Supervision.Note, `give "b" the exec block`) {
		t.Errorf("plugin b once plugin a, which ran its socket's process (pid %d), is deregistered: supervised %v, %+v; want left, not supervised, naming b's exec block",
			pid, p.Supervised, p.Supervision)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
}

// A plugin that ignores SIGTERM and hands its socket to a child in a session of its own:
// restarted past its health timeout, its process was killed (SIGKILL, its group), but the
// child, outside that group, kept serving the socket, and the restart took it for a plugin no
// agent started: probed only, never stopped, the plugin never started again. Every stop of a
// plugin's process, not only the agent's clean stop, also stops what carries its instance.
func TestAgentRestartStopsWhatThePluginLeftOutsideItsGroup(t *testing.T) {
	f := newFixture(t)
	clock := &fakeClock{t: time.Now()}
	f.now = clock.Now
	sp := f.execPlugin("sh", "stubborn-hands-socket")
	t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + sp.Exec.Env.Plain()[pluginRootEnv]) })
	f.register(sp)
	s := testSettings
	s.StopTimeout = 300 * time.Millisecond // the process ignores SIGTERM: SIGKILL ends it
	stop := f.startAgent(s)
	first, child := f.pid("sh"), f.childPid("sh")
	waitFor(t, "the agent to probe the plugin unhealthy", func() bool {
		return strings.Contains(f.plugin("sh").LastError, "Probe: Internal")
	})
	waitFor(t, "the restart past the health timeout", func() bool {
		clock.Advance(time.Second)
		return len(f.events("plugin-restart")) > 0
	})
	waitFor(t, "the plugin to be started again, or its socket taken for another's", func() bool {
		p := f.pid("sh")
		return (p != 0 && p != first && alive(p)) || strings.Contains(f.logs.String(), "no volctl agent started it")
	})
	if alive(child) {
		t.Errorf("the plugin's child (pid %d), outside its process group with its socket, survived its restart", child)
	}
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's child for a foreign plugin:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A plugin whose declaration changes (registered again with another exec block) while it runs
// with mounts is not stopped under them: the new declaration's runner adopts the running
// process, which runs the old command until its next restart, and it is stopped once the
// mounts are gone. (It held before; no test said so.)
func TestAgentKeepsAPluginWhoseExecChangesUnderMounts(t *testing.T) {
	f := newFixture(t)
	_, stop := f.startSickeningPlugin()
	cmd := f.claimAsCommand()
	pid := f.pid("fuse")
	sp := f.execPlugin("fuse", "sickens")
	sp.Exec.Env["VOLCTL_AGENT_TEST_CHANGED"] = "1"
	f.register(sp)
	waitFor(t, "the agent to take up the new declaration", func() bool {
		logs := f.logs.String()
		return strings.Contains(logs, "plugin declaration changed; supervising it anew") &&
			(strings.Contains(logs, "adopted the running plugin") || len(f.events("plugin-start")) > 1)
	})
	if got := f.pid("fuse"); got != pid || !alive(pid) || len(f.events("plugin-start")) != 1 {
		t.Fatalf("the plugin (pid %d, alive %v) was replaced under its mounts: pid file %d, plugin-start events %q", pid, alive(pid), got, f.events("plugin-start"))
	}
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	stopThenGone(t, stop, pid, "the plugin, released,")
}

// A plugin that crashes while it has mounts is restarted, and what it left running outside its
// process group stays: such a process (a FUSE daemon in a session of its own, carrying the
// plugin's instance) may be what serves the mounts, and stopping it takes them from the allocs
// that use them, which the rule never to stop a plugin under mounts forbids at the clean stop and
// at the restart past the health timeout alike (stopIfUnmounted, mountsHeld). The restart after
// an exit stopped it, mounts or not.
func TestAgentRestartAfterACrashUnderMountsLeavesWhatThePluginLeft(t *testing.T) {
	f := newFixture(t)
	stop, helper, _ := crashUnderMounts(t, f)
	if !alive(helper) {
		t.Errorf("the crashed plugin's helper (pid %d), outside its group, was stopped at its restart while the plugin has mounts:\n%s", helper, f.logs.String())
	}
	if err := stop(); err != nil { // the mounts stay; the fixture's clean-up undoes them
		t.Fatal(err)
	}
}
