package agent

import (
	"strings"
	"testing"
	"time"
)

// agent37: the wait for a plugin's daemon (daemonOf) gave up past the health timeout on the real
// clock, while the runner measures that timeout on the agent's (Config.Now; the fixture's
// agents run on a clock the test moves): on a loaded machine a daemon that took longer than
// that to bind was taken for the plugin's end, a plugin-exit recorded and the plugin started
// again beside it, in tests about something else. Here the health timeout is a millisecond and
// the daemon binds a second after its parent exited: on the real clock the wait gave up long
// before; on the agent's, which the test does not move, the agent waits while the daemon it
// left runs, and follows it once it serves. TestAgentFollowsADaemonThatBindsLate holds the wait
// itself (it ends when nothing the plugin left runs).
func TestDaemonWaitIsOnTheAgentsClock(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("dm", "daemonizes-late")
	t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + sp.Exec.Env.Plain()[pluginRootEnv]) })
	f.register(sp)
	s := testSettings
	s.HealthTimeout = time.Millisecond
	stop := f.startAgent(s)
	daemon := f.childPid("dm")
	f.daemonFollowed(daemon)
	if evs := f.events("plugin-exit"); len(evs) != 0 {
		t.Errorf("plugin-exit events = %q, want none: the daemon, binding late, is the plugin", evs)
	}
	if n := len(f.events("plugin-start")); n != 1 {
		t.Errorf("%d plugin-start events, want 1: %q", n, f.events("plugin-start"))
	}
	stopThenGone(t, stop, daemon, "the plugin's daemon")
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the agent took its own plugin's daemon for a foreign plugin:\n%s", logs)
	}
}
