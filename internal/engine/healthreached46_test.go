package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// pluginHealthRecorded is plugin mem's health as its row records it (what `volume ls`, `volume
// status` and the dashboard read), without probing it.
func (h *harness) pluginHealthRecorded() PluginInfo {
	h.t.Helper()
	ps, err := h.e.Plugins(h.ctx)
	if err != nil || len(ps) != 1 {
		h.t.Fatalf("plugins = %+v, %v", ps, err)
	}
	return ps[0]
}

// downThenBack records plugin mem unhealthy, its socket gone (as `volctl status` run while it
// restarts records it), serves it again on its socket (a new socket file: the next connection
// fingerprints it anew) and opens the engine again, as the next volctl process.
func (h *harness) downThenBack(ready bool) {
	h.t.Helper()
	h.stopServe()
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		h.t.Fatal(err)
	}
	if got := h.pluginHealthRecorded().Health(); got != PluginUnhealthy {
		h.t.Fatalf("health recorded with the plugin's socket gone = %s; want unhealthy", got)
	}
	h.mem.SetReady(&ready)
	h.serveAgain(h.t)
	h.open(Config{})
	h.mem.ResetCalls()
}

// A command that reaches a plugin anew after a restart (fingerprints it through its new socket)
// while the plugin's row still records it unhealthy probes it once and records what it found with
// the fingerprint. Before, `volume create` succeeded through the plugin and `volume status` of the
// volume it made said right after "Schedulable = no: ... socket does not exist (is the plugin
// running?)" until something else probed it: a command's record read as the plugin's outage.
func TestPluginReachedAnewIsProbedWhenItsRecordSaysUnhealthy(t *testing.T) {
	t.Parallel()

	t.Run("create", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.downThenBack(true)
		h.create(volume("v", capab(spec.SingleNodeWriter)))
		if n := h.mem.CallCount(csi.RPCProbe); n != 1 {
			t.Errorf("the create sent Probe %d times; want once (its record said unhealthy)", n)
		}
		if p := h.pluginHealthRecorded(); p.Health() != PluginHealthy || p.LastError != "" {
			t.Errorf("health recorded after the create reached the plugin: %s (%q); want healthy", p.Health(), p.LastError)
		}
		if s := h.volumeInfo("v").Schedulability(); !s.OK() {
			t.Errorf("volume v, made through the plugin a moment ago: %q; want schedulable", s)
		}
		if evs := h.eventsOf("plugin-health", "", `plugin "mem" became healthy`); len(evs) != 1 {
			t.Errorf("health events = %q; want one saying it became healthy", evs)
		}

		// Recorded healthy now, the next process's connection (the same socket file, the
		// fingerprint reused) sends no Probe of its own.
		h.open(Config{})
		h.mem.ResetCalls()
		h.create(volume("w", capab(spec.SingleNodeWriter)))
		if n := h.mem.CallCount(csi.RPCProbe); n != 0 {
			t.Errorf("a create through a plugin recorded healthy sent Probe %d times; want none", n)
		}
	})

	t.Run("claim probes once", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.create(volume("db", capab(spec.SingleNodeWriter)))
		h.downThenBack(true)
		h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		if n := h.mem.CallCount(csi.RPCProbe); n != 1 {
			t.Errorf("the claim sent Probe %d times; want once: the connection's probe is the claim's", n)
		}
		if p := h.pluginHealthRecorded(); p.Health() != PluginHealthy {
			t.Errorf("health recorded after the claim: %s (%q); want healthy", p.Health(), p.LastError)
		}
	})

	t.Run("not ready", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.downThenBack(false)
		// A create does not ask for a healthy plugin (Nomad's does not either): it goes
		// ahead, and what the probe found is recorded.
		h.create(volume("v", capab(spec.SingleNodeWriter)))
		if p := h.pluginHealthRecorded(); p.Health() != PluginNotReady {
			t.Errorf("health recorded after a create through a plugin that says it is not ready: %s (%q); want not ready", p.Health(), p.LastError)
		}
		if s := h.volumeInfo("v").Schedulability(); s.Why != PluginUnready {
			t.Errorf("volume v of a plugin not ready: %q; want %q", s, PluginUnready)
		}
		// The claim's own probe still decides, and refuses.
		h.mem.ResetCalls()
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
			t.Error("a claim on a volume whose plugin says it is not ready was admitted")
		}
		if n := h.mem.CallCount(csi.RPCProbe); n != 1 {
			t.Errorf("the claim sent Probe %d times; want once", n)
		}
	})
}
