package agent

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The stop's other branch: plugin fuse crashes under mounts, its helper left running (the
// rule), and the agent waits out its restart backoff (a minute here), so no process of the
// plugin runs when the mounts go (unmounted, and released through a copy of the plugin run by
// hand on its socket) and the agent stops. What the crashed instance left is stopped all the
// same, once the plugin has no mounts; the copy run by hand, which no agent started, is not.
// Round 61 wrote this branch (stopIfUnmounted without a process) and checked it by reading:
// without it, the helper ran on after the agent's stop.
func TestCleanStopWithNoProcessStopsWhatACrashedInstanceLeft(t *testing.T) {
	f := newFixture(t)
	s := testSettings
	s.BackoffMin, s.BackoffMax = time.Minute, time.Minute
	var first int
	stop, helper, cmd := crashUnderMountsWith(t, f, s, &first)
	waitFor(t, "the plugin to crash, not started again yet", func() bool {
		return len(f.events("plugin-exit")) > 0 && !alive(first)
	})
	if !alive(helper) {
		t.Fatalf("the helper (pid %d) was stopped under mounts", helper)
	}
	// The plugin run by hand on its socket, serving the release (its own instance: none).
	sp := f.execPlugin("fuse", "mounts-with-helper")
	byHand := exec.Command(sp.Exec.Command, sp.Exec.Args...)
	byHand.Env = append(pluginEnv(os.Environ(), sp), pluginModeEnv+"=sickens")
	byHand.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := byHand.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = byHand.Process.Kill(); _ = byHand.Wait() })
	waitFor(t, "the plugin run by hand to serve its socket", func() bool { return socketsLive(execSockets(sp)) })
	if p := f.pid("fuse"); p != 0 && p != first && alive(p) {
		t.Fatalf("the agent started the plugin again (pid %d) within its minute's backoff", p)
	}
	mountsGoneThenStop(t, f, cmd, stop)
	if alive(helper) {
		t.Errorf("the crashed plugin's helper (pid %d), left outside its group under mounts, still runs after the agent's clean stop, "+
			"which found no process of the plugin running and no mounts", helper)
	}
	if !alive(byHand.Process.Pid) {
		t.Errorf("the agent's stop stopped the plugin run by hand (pid %d), which no agent started", byHand.Process.Pid)
	}
}
