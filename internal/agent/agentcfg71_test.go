package agent

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// TestExecChangedWhileRunningIsCountedAsARestart: a plugin's exec block changed while the agent
// ran it without mounts (plugin register, or an edited config): the agent stopped the process
// and started it again at once with the new exec block, a restart docs/metrics.md counts in
// volctl_plugin_restarts_total{reason="exec_changed"} and /healthz in restarts, and neither
// counted it: the stop and start read as a manual stop. Found by helper review71.
func TestExecChangedWhileRunningIsCountedAsARestart(t *testing.T) {
	f, rec, sp, ag, stop := recordedHealthyPlugin(t)
	first := f.pid("hp")

	// Its exec block changed (an env value), no mounts: restarted with the new one.
	sp.Exec = &spec.Exec{Command: sp.Exec.Command, Args: sp.Exec.Args, Env: maps.Clone(sp.Exec.Env)}
	sp.Exec.Env["ROUND71"] = "r71-value-x9"
	f.register(sp)
	waitFor(t, "the plugin to run again with its new exec block", func() bool {
		p := f.pid("hp")
		return p != 0 && p != first && alive(p) && f.plugin("hp").Healthy
	})
	restarts := -1
	for _, p := range ag.Status().Plugins {
		if p.ID == "hp" {
			restarts = p.Restarts
		}
	}
	got := slices.DeleteFunc(rec.list(), func(e string) bool { return !strings.HasPrefix(e, "restarted ") })
	if !slices.Contains(got, "restarted hp exec_changed") || restarts != 1 {
		t.Errorf("plugin hp was stopped and started again for its changed exec block (pid %d, then %d): restarts told to the metrics %q, /healthz restarts %d; "+
			"want one restart, reason exec_changed (docs/metrics.md)", first, f.pid("hp"), got, restarts)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestUnstartableExecBlockStopsNothingWithoutMounts: docs/agent.md says a declared exec block
// that cannot start (its command not found, or one the agent refuses to run) stops nothing: the
// process runs on, and one plugin-restart-withheld event says why. The process running without
// mounts when the exec block was changed to one that cannot start (a command mistyped in a
// plugin register) was stopped at once, the plugin left down, its start failing at every try.
// Found by helper review71.
func TestUnstartableExecBlockStopsNothingWithoutMounts(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	_, stop := f.startAgentWith(func(c *Config) { c.Settings = testSettings })
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	pid := f.pid("hp")

	broken := sp
	ex := *sp.Exec
	ex.Command = filepath.Join(f.dir, "no-such-plugin")
	broken.Exec = &ex
	f.register(broken)
	waitFor(t, "the agent to take up the new declaration", func() bool {
		return strings.Contains(f.logs.String(), "supervising it anew")
	})
	for range 5 {
		time.Sleep(testSettings.ProbeIntervalReady)
		if !alive(pid) {
			t.Fatalf("plugin pid %d was stopped for a declared exec block that cannot start (its command %s is not there); "+
				"plugin-stop events %q, plugin-start events %q, withheld %q",
				pid, ex.Command, f.events("plugin-stop"), f.events("plugin-start"), f.events("plugin-restart-withheld"))
		}
	}
	waitFor(t, "one plugin-restart-withheld event saying why", func() bool {
		w := f.events("plugin-restart-withheld")
		return len(w) == 1 && strings.Contains(w[0], "cannot start")
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// recordedHealthyPlugin starts an agent whose observer records what it is told, supervising the
// exec plugin "hp" (volctl's hostpath), registered and healthy.
func recordedHealthyPlugin(t *testing.T) (f *fixture, rec *recorder, sp spec.Plugin, ag *Agent, stop func() error) {
	t.Helper()
	f = newFixture(t)
	rec = &recorder{}
	f.obs = rec
	sp = f.execPlugin("hp", "hostpath")
	f.register(sp)
	ag, stop = f.startAgentWith(func(c *Config) { c.Settings, c.Observer = testSettings, f.obs })
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	return f, rec, sp, ag, stop
}
