package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A plugin's process may fork helpers, which stay in the process group the agent made for it.
// Stopping the plugin stops the whole group, even when the process the agent started exits at
// SIGTERM and leaves a helper that ignores it.
func TestAgentStopsThePluginsWholeProcessGroup(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("fk", "forker"))
	s := testSettings
	s.StopTimeout = 300 * time.Millisecond // the child ignores SIGTERM: SIGKILL ends it
	stop := f.startAgent(s)
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
	f.register(f.execPlugin("fk", "forker-exits"))
	s := testSettings
	s.StopTimeout = 300 * time.Millisecond // the child ignores SIGTERM: SIGKILL ends it
	stop := f.startAgent(s)
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
	f.register(f.execPlugin("chatty", "chatty"))
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("chatty").Healthy })
	log := filepath.Join(f.dir, "logs", "chatty.log")
	waitFor(t, "the log to be kept under its limit", func() bool {
		st, err := os.Stat(log)
		return err == nil && st.Size() <= maxLogSize
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(log + ".1"); err != nil || st.Size() == 0 {
		t.Errorf("the rotated log %s.1: %v, want the older output there", log, err)
	}
}
