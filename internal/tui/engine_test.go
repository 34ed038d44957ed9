package tui

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// The dashboard wired to a real engine on a temp state dir, driving an in-memory CSI plugin
// over a real socket: what it shows comes from the store, its actions reach the plugin, and a
// plugin that dies shows as unhealthy after the next probe.
func TestAgainstRealEngine(t *testing.T) {
	ctx := context.Background()
	e, stop := realEngine(t)
	for _, id := range []string{"db", "media", "spare"} {
		_, err := e.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Secrets:      spec.Secrets{"token": "s3cr3t-value"},
			MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"password=hunter2"}}})
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	for _, c := range [][2]string{{"db", "web-0"}, {"media", "render-0"}} {
		if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: c[0], Alloc: c[1]}); err != nil {
			t.Fatalf("claim %s for %s: %v", c[0], c[1], err)
		}
	}

	h := newHarness(t, e, Options{})
	if got := h.viewKeys(); !slices.Equal(got, []string{"db", "media", "spare"}) {
		t.Fatalf("volumes %v", got)
	}
	h.keys("enter")
	out := h.m.View()
	if !strings.Contains(out, "Volume db") || !strings.Contains(out, "Plugin Health     = healthy") || !strings.Contains(out, "web-0") {
		t.Errorf("volume detail from the engine (its claim first):\n%s", out)
	}
	h.keys("G")
	out = h.m.View()
	if !strings.Contains(out, "token             = [REDACTED]") {
		t.Errorf("volume detail lacks its redacted secret:\n%s", out)
	}
	for _, secret := range []string{"s3cr3t-value", "hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("the detail shows secret %q", secret)
		}
	}

	// Release web-0's claim through the dialog.
	h.keys("2", "/", "web-0", "enter", "x", "tab", "enter")
	if h.m.status.failed || !strings.Contains(h.m.status.text, `released the claim of "web-0" on "db"`) {
		t.Fatalf("release: status %q", h.m.status.text)
	}
	h.keys("esc")
	if got := h.viewKeys(); len(got) != 1 {
		t.Errorf("claims after release: %v, want only media's", got)
	}
	if cs, _ := e.Claims(ctx); len(cs) != 1 || cs[0].Alloc != "render-0" {
		t.Errorf("engine claims after release: %+v", cs)
	}

	// Delete the spare volume.
	h.keys("1", "/", "spare", "enter", "D", "tab", "enter")
	if h.m.status.failed {
		t.Fatalf("delete: %s", h.m.status.text)
	}
	if _, err := e.Volume(ctx, "spare"); err == nil {
		t.Error("spare still exists after delete")
	}

	// Kill the plugin: the next probe records it unhealthy, and the plugins view says so.
	stop()
	h.keys("3")
	h.send(probeTickMsg{})
	if !strings.Contains(rowText(h), "unhealthy") {
		t.Errorf("after the plugin died and a probe ran, the row is %q", rowText(h))
	}
	h.keys("esc", "1", "esc")
	if got := strings.Join(h.m.tabs[tabVolumes].rows[0].cells, " "); !strings.Contains(got, "no: plugin unhealthy") {
		t.Errorf("volume of a dead plugin: %q, want not schedulable", got)
	}
}

// realEngine is an engine on a temp state dir with plugin "mem" registered: an in-memory CSI
// plugin that mounts, served on a real socket (stop ends it), one try per RPC and short timeouts.
func realEngine(t *testing.T) (e *engine.Engine, stop func()) {
	t.Helper()
	return realEngineWith(t, nil)
}

// realEngineWith is realEngine with the plugin's configuration edited by mutate (nil: none).
func realEngineWith(t *testing.T, mutate func(*csitest.MemConfig)) (e *engine.Engine, stop func()) {
	t.Helper()
	return realEngineIn(t, t.TempDir(), mutate)
}

// realEngineIn is realEngineWith on state dir dir, which a test may open a store on.
func realEngineIn(t *testing.T, dir string, mutate func(*csitest.MemConfig)) (e *engine.Engine, stop func()) {
	t.Helper()
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	if mutate != nil {
		mutate(&cfg)
	}
	socket, stop := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, cfg)))
	e, err := engine.Open(ctx, engine.Config{
		StateDir: dir,
		Retry:    engine.RetryPolicy{Attempts: 1, Base: time.Millisecond, Max: time.Millisecond},
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return e, stop
}

// TestEventsTabSaysHowManyTheLogHolds: the events view keeps the newest --events (200) of a
// log of up to 10,000, and its tab counted the rows it kept: "Events 200", with "1 of 200",
// on a log of thousands, nothing saying more were logged. The tab counts the log, and the
// status line says the view holds its newest.
func TestEventsTabSaysHowManyTheLogHolds(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := e.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	all, err := e.Events(ctx, 0, engine.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) <= 3 {
		t.Fatalf("the log holds %d events: the test needs more than the view keeps", len(all))
	}
	h := newHarness(t, e, Options{Events: 3})
	h.keys("4")
	out := h.m.View()
	bar := strings.Split(out, "\n")[0]
	if want := "[4 Events " + strconv.Itoa(len(all)) + "]"; !strings.Contains(bar, want) {
		t.Errorf("the tab bar does not count the log's %d events, want %s: %q", len(all), want, bar)
	}
	if want := "1 of 3 · newest 3 of " + strconv.Itoa(len(all)) + " events"; !strings.Contains(out, want) {
		t.Errorf("the status line does not say the view holds the newest 3 of %d, want %q:\n%s", len(all), want, out)
	}

	// A view that holds the whole log says nothing more.
	h = newHarness(t, e, Options{Events: len(all)})
	h.keys("4")
	if out := h.m.View(); !strings.Contains(out, "1 of "+strconv.Itoa(len(all))+" · ") || strings.Contains(out, "newest") {
		t.Errorf("a view of the whole log (%d events):\n%s", len(all), out)
	}
}
