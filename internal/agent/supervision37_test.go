package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// agent37: plugin status (plain, --json) and the dashboard said "Supervised: yes" of every
// plugin with an exec block, from the declaration alone: also of one whose socket the agent
// found served by a process it did not start (a plugin started by hand, another agent's on
// another state dir, a daemon it could not tell for the plugin's), which it probes only and
// never stops or restarts. Only the agent's log and /healthz ("foreign") said so. The agent
// records what it does with each exec plugin's process (the plugin's supervision: runs, daemon,
// probed, stopped, left), and plugin status shows it.

// supervisionOf waits for the agent to record plugin id's supervision in mode, and returns
// the plugin as plugin status shows it.
func (f *fixture) supervisionOf(id, mode string) engine.PluginInfo {
	f.t.Helper()
	var p engine.PluginInfo
	waitFor(f.t, fmt.Sprintf("plugin %q's supervision recorded as %q", id, mode), func() bool {
		p = f.plugin(id)
		return p.Supervision != nil && p.Supervision.Mode == mode
	})
	return p
}

// A plugin whose socket a process the agent did not start serves (started by hand, then
// daemonised; or carrying another agent's plugin instance): plugin status says the agent
// probes it only, naming the pid serving the socket, and that it can neither stop nor restart
// it; Supervised is false.
func TestPluginStatusSaysTheAgentOnlyProbesAPluginItDidNotStart(t *testing.T) {
	for _, tc := range []struct {
		name, instance, says string
	}{
		{"by-hand", "", "which no agent of this state dir started"},
		{"another-agents", "0123456789abcdef01234567", "another agent (on another state dir) runs it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sp := f.execPlugin("dm", "listens-then-daemonises")
			root := sp.Exec.Env.Plain()[pluginRootEnv]
			t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + root) })
			var env []string
			if tc.instance != "" {
				env = append(env, instanceEnv+"="+tc.instance)
			}
			f.runByHand(sp, env...)
			waitFor(t, "the daemon to serve the socket", func() bool { return socketsLive([]string{sp.Socket}) })
			daemons := pidsWithEnv(pluginRootEnv + "=" + root)
			if len(daemons) != 1 {
				t.Fatalf("processes with the plugin's root: %v; want its daemon alone", daemons)
			}
			f.register(sp)
			if p := f.plugin("dm"); !p.Supervised || p.Supervision != nil {
				t.Fatalf("before any agent: supervised %v, supervision %+v; want yes (its exec block) and no record", p.Supervised, p.Supervision)
			}
			stop := f.startAgent(testSettings)
			p := f.supervisionOf("dm", engine.SupervisionProbed)
			s := p.Supervision
			if p.Supervised || s.CanStop || s.CanRestart || s.Pid != daemons[0] {
				t.Errorf("plugin status: supervised %v, supervision %+v; want not supervised, neither stop nor restart, pid %d (its socket's server)",
					p.Supervised, s, daemons[0])
			}
			words := s.Words()
			for _, want := range []string{"probes it only", fmt.Sprintf("served by pid %d", daemons[0]), tc.says} {
				if !strings.Contains(words, want) {
					t.Errorf("supervision says %q; want it to say %q", words, want)
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if !alive(daemons[0]) {
				t.Errorf("the agent stopped pid %d, a plugin it did not start", daemons[0])
			}
			if s := f.plugin("dm").Supervision; s == nil || s.Mode != engine.SupervisionProbed {
				t.Errorf("after the agent's stop: supervision %+v; want still probed only (it never ran it)", s)
			}
		})
	}
}

// The honest cases, a plugin the agent started (shown run by it, its pid, then stopped by it)
// and one that daemonises (shown followed as its daemon), are held by
// TestAgentNotifiesReadyOncePluginsHealthyAndRestored and
// TestAgentFollowsAPluginThatDaemonisesAfterServing.
