package agent

import (
	"strings"
	"testing"
)

// TestPluginThatNeverStartsIsReportedUnhealthy: a supervised plugin whose every start fails
// (its command gone after an upgrade, refused by the program check, a pid file that cannot be
// written) was never probed: the runner went from one failed start to the next. /healthz said
// its health was "" ("before the first probe", docs/json.md) for as long as the agent ran, and
// volctl_plugin_healthy had no series for it, so docs/metrics.md's VolctlPluginUnhealthy alert
// (volctl_plugin_healthy == 0) never fired for the plugin down for good (runner.startFailed).
// Found by helper review67.
func TestPluginThatNeverStartsIsReportedUnhealthy(t *testing.T) {
	f := newFixture(t)
	f.registerBroken()
	rec := &recorder{}
	f.obs = rec
	a, stop := f.startAgentWith(func(c *Config) { c.Settings, c.Observer = testSettings, rec })
	waitFor(t, "three failed starts", func() bool { return len(f.events("plugin-start")) >= 3 })
	var health string
	for _, p := range a.Status().Plugins {
		if p.ID == "broken" {
			health = p.Health
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if health != "unhealthy" {
		t.Errorf("/healthz health of a plugin whose every start failed = %q, want \"unhealthy\"", health)
	}
	if !rec.has("probed broken healthy=false") {
		t.Errorf("the observer (volctl_plugin_healthy) was never told the plugin is unhealthy: %q", strings.Join(rec.list(), "; "))
	}
}
