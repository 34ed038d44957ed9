package cli

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// TestPluginHealthWordsMatchEngine: the plugin table, its problem lines and the plugin detail
// word a plugin's health as the engine does (engine.PluginHealth), which is what the dashboard
// shows: a plugin never probed is "unknown", not "unhealthy" or "false"; one whose Probe says
// not ready is "not ready", and is not counted healthy in the status summary.
func TestPluginHealthWordsMatchEngine(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	plugins := []engine.PluginInfo{
		{ID: "fresh"},
		{ID: "ok", Healthy: true, Ready: true, ProbedAt: now},
		{ID: "slow", Healthy: true, ProbedAt: now},
		{ID: "down", ProbedAt: now, LastError: "Probe: Unavailable: nothing is listening"},
	}
	var table bytes.Buffer
	if err := writePluginTable(&table, plugins); err != nil {
		t.Fatal(err)
	}
	writePluginProblems(&table, plugins)
	got := table.String()
	for _, p := range plugins {
		if !strings.Contains(got, "\n"+p.ID+" ") || !lineHas(got, p.ID+" ", " "+p.Health().String()+" ") {
			t.Errorf("plugin table: row %q does not show the engine's health %q:\n%s", p.ID, p.Health(), got)
		}
	}
	for _, want := range []string{
		`Plugin "fresh" health is unknown: not probed yet`,
		`Plugin "slow" is not ready: its Probe says so`,
		`Plugin "down" is unhealthy: Probe: Unavailable: nothing is listening`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plugin problems: want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "true") || strings.Contains(got, "false") {
		t.Errorf("plugin table words health as a bool, the dashboard as a word:\n%s", got)
	}

	for _, p := range plugins {
		var detail bytes.Buffer
		if err := writePluginDetail(&detail, p, now); err != nil {
			t.Fatal(err)
		}
		if !lineHas(detail.String(), "Health ", "= "+p.Health().String()) {
			t.Errorf("plugin detail of %q: want Health = %s (the dashboard's key and word):\n%s", p.ID, p.Health(), detail.String())
		}
	}

	var sum bytes.Buffer
	w := bufio.NewWriter(&sum)
	if err := writeStatusSummary(w, statusSummary{Plugins: plugins}, nil, 0, now); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if !strings.HasPrefix(sum.String(), "Plugins: 4 (1 healthy)\n") {
		t.Errorf("status summary counts a plugin healthy that the dashboard does not:\n%s", sum.String())
	}
}

// lineHas reports whether a line of s starts with prefix and contains sub.
func lineHas(s, prefix, sub string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l+" ", sub) {
			return true
		}
	}
	return false
}

// TestFlagsWordedAsTheDashboard: a yes/no fact in a detail is "yes" or "no" on the command line
// as in the dashboard (display.YesNo), not Go's "true"/"false": a plugin's Supervised, a
// volume's Staged.
func TestFlagsWordedAsTheDashboard(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	var p bytes.Buffer
	if err := writePluginDetail(&p, engine.PluginInfo{ID: "hp", Supervised: true}, now); err != nil {
		t.Fatal(err)
	}
	if !lineHas(p.String(), "Supervised ", "= yes") {
		t.Errorf("plugin detail: want Supervised = yes, as the dashboard says:\n%s", p.String())
	}
	var v bytes.Buffer
	if err := writeVolumeDetail(&v, engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", PluginID: "hp"}, Staged: true}, now); err != nil {
		t.Fatal(err)
	}
	if !lineHas(v.String(), "Staged ", "= yes") {
		t.Errorf("volume detail: want Staged = yes, as the dashboard says:\n%s", v.String())
	}
}
