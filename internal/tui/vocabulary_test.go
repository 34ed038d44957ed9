package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
)

// The dashboard words what the engine knows in the engine's words (engine/facts.go,
// internal/display), as the command line does: a plugin never probed is "unknown", a volume
// being deleted "no: deleting", a claim's notes "(releasing, needs reconcile)", ages in one
// unit, latencies rounded, topology "k=v, k=v", and the plugin detail states health once.
func TestOneVocabulary(t *testing.T) {
	fake := fixture()
	fake.data.Plugins = append(fake.data.Plugins, engine.PluginInfo{ID: "zfs", Provider: "zfs.csi", NodeID: "n1",
		Topology: map[string]string{"zone": "a", "node": "n1"}})
	fake.data.Plugins[1].ProbeLatency = engine.Duration(5000350 * time.Microsecond)
	fake.data.Volumes = append(fake.data.Volumes, engine.VolumeSummary{ID: "old", PluginID: "hostpath", State: "deleting"})
	fake.data.Claims = append(fake.data.Claims, engine.ClaimInfo{ID: 9, VolumeID: "scratch", Alloc: "job-9", Mode: "write",
		State: "published", Releasing: true, NeedsReconcile: true, CreatedAt: ago(117 * time.Second)})
	h := newHarness(t, fake, Options{})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 50})

	cell := func(tab tabID, key string, col int) string {
		for _, r := range h.m.tabs[tab].rows {
			if r.key == key {
				return r.cells[col]
			}
		}
		t.Fatalf("no row %q in %s", key, tabNames[tab])
		return ""
	}
	for _, tt := range []struct {
		what, got, want string
	}{
		{"never-probed plugin's health", cell(tabPlugins, "zfs", 4), "unknown"},
		{"deleting volume's schedulability", cell(tabVolumes, "old", 6), "no: deleting"},
		{"unhealthy plugin's volume", cell(tabVolumes, "pg-data", 6), "no: plugin unhealthy"},
		{"releasing claim's state", cell(tabClaims, "9", 3), "published (releasing, needs reconcile)"},
		{"claim's age", cell(tabClaims, "9", 5), "1m"},
		{"probe latency", cell(tabPlugins, "hostpath", 5), "5.0s"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.what, tt.got, tt.want)
		}
	}

	h.keys("3", "end", "enter")
	out := h.m.View()
	for _, want := range []string{"Health", "unknown: not probed yet", "Topology", "node=n1, zone=a"} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin detail lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"Healthy ", "Ready  "} {
		if strings.Contains(out, bad) {
			t.Errorf("plugin detail states health twice (%q):\n%s", bad, out)
		}
	}
}
