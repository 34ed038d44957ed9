package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// A plugin that serves a while, then daemonises (hands its listening socket to a child in a
// session of its own and exits): the agent's connection, fingerprinted through the first
// process, is refused once that process is gone ("another process than the one that listened
// there"), and the probe must fingerprint the daemon on the socket again.
func TestAgentFollowsAPluginThatDaemonisesAfterServing(t *testing.T) {
	f := newFixture(t)
	stop, _ := f.startDaemonisingLater()
	first := f.pid("dm")
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("dm").Healthy })
	fingerprinted := f.plugin("dm").FingerprintedAt
	if err := syscall.Kill(first, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	daemon := f.childPid("dm")
	f.daemonFollowed(daemon)
	waitFor(t, "the daemon to be fingerprinted and healthy", func() bool {
		p := f.plugin("dm")
		return p.Healthy && p.FingerprintedAt.After(fingerprinted)
	})
	// plugin status says the agent follows the daemon, which it stops and restarts (agent37).
	if p := f.supervisionOf("dm", engine.SupervisionDaemon); !p.Supervised || !p.Supervision.CanStop || !p.Supervision.CanRestart || p.Supervision.Pid != daemon {
		t.Errorf("plugin status: supervised %v, supervision %+v; want supervised, its daemon's pid %d, stop and restart", p.Supervised, p.Supervision, daemon)
	}
	stopThenGone(t, stop, daemon, "the plugin's daemon")
	if n := len(f.events("plugin-start")); n != 1 {
		t.Errorf("%d plugin-start events, want 1: %q", n, f.events("plugin-start"))
	}
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's daemon for a foreign plugin:\n%s", logs)
	}
}

// startDaemonisingLater registers plugin dm, the test plugin serving until SIGUSR1 and then
// daemonising (serves-then-daemonises), and starts an agent; it returns the agent's stop and
// the plugin's spec. What the plugin's processes left is killed when the test ends.
func (f *fixture) startDaemonisingLater() (stop func() error, root string) {
	sp := f.execPlugin("dm", "serves-then-daemonises")
	root = sp.Exec.Env.Plain()[pluginRootEnv]
	f.t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + root) })
	f.register(sp)
	stop = f.startAgent(testSettings)
	waitFor(f.t, "the plugin to be started", func() bool { return alive(f.pid("dm")) })
	return stop, root
}

// An agent stopped (SIGTERM) while it waits for the daemon a plugin's exited process left (a
// daemon still starting) must leave nothing running that no pid file names: its wait ended, the
// runner took the exit for the plugin's end, could not count its mounts (the agent's context
// was done), left the daemon running with a warning, and removed the pid file; the clean stop
// then had no process to stop, and the next agent took the daemon, once it served, for a plugin
// no agent started, never stopped. The runner leaves the exited process to the stop, which
// stops what it left (no mounts).
func TestAgentStoppedWhileWaitingForADaemonStopsIt(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("dm", "daemonizes-unbound")
	root := sp.Exec.Env.Plain()[pluginRootEnv]
	t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + root) })
	f.register(sp)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	orig := beforeFollowDaemon
	t.Cleanup(func() { beforeFollowDaemon = orig })
	beforeFollowDaemon = func(string) { cancel() } // SIGTERM, as the plugin's process has exited
	a, err := New(Config{Engine: f.e, Settings: testSettings, Now: f.agentClock(),
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// Written before the plugin's process exited (daemonize), so before the agent stopped.
	b, err := os.ReadFile(filepath.Join(root, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if alive(daemon) {
		t.Errorf("the plugin's daemon (pid %d), still starting when the agent was stopped, runs on after a clean stop (no mounts), pid file %d", daemon, f.pid("dm"))
	}
}
