package cli

import (
	"bufio"
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A moment a second ago or less reads "just now", not "now ago".
func TestAgoReadsLikeAPerson(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		t    time.Time
		want string
	}{
		{now, "just now"},
		{now.Add(-300 * time.Millisecond), "just now"},
		{now.Add(-48 * time.Hour), "2d ago"},
		{time.Time{}, ""},
	} {
		if got := ago(now, tt.t); got != tt.want {
			t.Errorf("ago(%v) = %q, want %q", now.Sub(tt.t), got, tt.want)
		}
	}
}

// volctl status on an empty state dir, and with a plugin but no volume, says what to do next.
func TestStatusEmptyStatesSayWhatNext(t *testing.T) {
	ctx := context.Background()
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	run := func(eng func(context.Context) (*engine.Engine, error)) string {
		ios, _, out, _ := iostreams.Test()
		if err := statusRun(ctx, &StatusOptions{IO: ios, Engine: eng, Now: time.Now, MaxVolumes: 20}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	out := run(func(context.Context) (*engine.Engine, error) { return e, nil })
	if !strings.Contains(out, "Next: start a CSI plugin and register it (volctl plugin register --id ID --socket PATH),") ||
		!strings.Contains(out, "volctl quickstart") {
		t.Errorf("status with nothing registered gives no next step:\n%s", out)
	}
	h := newCLIHarness(t)
	out = run(h.engine)
	if !strings.Contains(out, "Next: volctl init volume writes a volume spec; volctl volume create FILE creates it") {
		t.Errorf("status with a plugin and no volume gives no next step:\n%s", out)
	}
	if strings.Contains(out, "register it (volctl plugin register") {
		t.Errorf("status with a plugin still says to register one:\n%s", out)
	}
}

// Status says why a plugin is unhealthy and why a volume cannot take claims, with a next step.
func TestStatusExplainsUnhealthyAndUnschedulable(t *testing.T) {
	plugins := []engine.PluginInfo{
		{ID: "ok", Healthy: true, Ready: true},
		{ID: "hp", LastError: "plugin socket /run/hp.sock does not exist (is the plugin running?)",
			ProbedAt: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)}, // probed, and the probe failed
		{ID: "slow", Healthy: true},
	}
	var b bytes.Buffer
	writePluginProblems(&b, plugins)
	want := `Plugin "hp" is unhealthy: plugin socket /run/hp.sock does not exist (is the plugin running?)
  volumes using it cannot take claims until it passes a probe again (volctl plugin status hp probes it)
Plugin "slow" is not ready: its Probe says so; claims on its volumes are refused until it is ready
`
	if b.String() != want {
		t.Errorf("plugin problems:\n%s\nwant\n%s", b.String(), want)
	}

	for _, tt := range []struct {
		v    engine.VolumeInfo
		want string
	}{
		{engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", PluginID: "hp", State: "ready"},
			PluginError: "plugin socket /run/hp.sock does not exist (is the plugin running?)"},
			`its plugin "hp" is unhealthy: plugin socket /run/hp.sock does not exist (is the plugin running?); once it is running, volctl plugin status hp probes it again`},
		{engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", PluginID: "hp", State: "ready"},
			PluginError: `plugin "hp" is not registered`},
			`its plugin "hp" is not registered: register it again (volctl plugin register)`},
		{engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", PluginID: "hp", State: "creating"}, PluginHealthy: true},
			`the volume is creating, not ready: volctl reconcile finishes that`},
	} {
		var b bytes.Buffer
		if err := writeVolumeDetail(&b, tt.v, time.Now()); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^Not Schedulable += ` + regexp.QuoteMeta(tt.want) + `$`).MatchString(b.String()) {
			t.Errorf("volume detail lacks %q:\n%s", tt.want, b.String())
		}
	}
	var ok bytes.Buffer
	if err := writeVolumeDetail(&ok, engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", State: "ready", Schedulable: true}, PluginHealthy: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ok.String(), "Not Schedulable") {
		t.Errorf("a schedulable volume explains why it is not:\n%s", ok.String())
	}

	// The summary counts the volumes that cannot take claims and points to the reason.
	var s bytes.Buffer
	w := bufio.NewWriter(&s)
	vols := []engine.VolumeSummary{{ID: "db", PluginID: "hp", State: "ready"}}
	sum := statusSummary{Plugins: plugins, Volumes: volumeCounts{Total: 1}}
	if err := writeStatusSummary(w, sum, vols, 20, time.Now()); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if !strings.Contains(s.String(), "1 volume(s) cannot take claims (volctl volume status ID says why)") {
		t.Errorf("summary:\n%s", s.String())
	}
}

// Creating a volume again with the same spec says it is unchanged, not created.
func TestVolumeCreateAgainSaysUnchanged(t *testing.T) {
	h := newCLIHarness(t)
	files := map[string]string{"a.hcl": strings.NewReplacer("%s", "a").Replace(createSpec)}
	var lines []string
	for range 2 {
		ios, _, out, _ := iostreams.Test()
		o := &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: specFiles(files), Verb: spec.VerbCreate, Files: []string{"a.hcl"}}
		if err := volumeSubmitRun(h.ctx, o); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(out.String()))
	}
	if !strings.HasPrefix(lines[0], `Volume "a" created (external ID "`) {
		t.Errorf("first create: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], `Volume "a" unchanged: it exists with this spec (external ID "`) {
		t.Errorf("second create: %q, want it to say unchanged", lines[1])
	}
}
