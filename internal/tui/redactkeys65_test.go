package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestVolumeWhoseIDHoldsASecretCanBeOpenedAndActedOn: the dashboard scrubs its whole
// read, the volumes' IDs included, and then uses the scrubbed ID as the row's key: to read the
// volume's detail and as the target of d, D, F. A volume whose ID holds another volume's
// secret value (three bytes or more are scrubbed wherever they are; a spec's check looks only at
// its own secrets) is opened as "[REDACTED]-db", which the engine does not know: the detail says
// the volume "no longer exists", and a delete says so too and does nothing, while `volctl
// volume status nightly-db` shows it. What is shown may be scrubbed; what is looked up must not.
// The rows and actions now go by the IDs as read (engine.VolumeSummary.Key), and what is shown
// stays scrubbed. Found by helper review65.
func TestVolumeWhoseIDHoldsASecretCanBeOpenedAndActedOn(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "media", Name: "media", Type: "csi", PluginID: "mem", Capabilities: caps,
		Secrets: spec.Secrets{"token": "nightly"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "nightly-db", Name: "db", Type: "csi", PluginID: "mem", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, e, Options{})
	h.keys("/", "-db", "enter")
	if got := h.viewKeys(); len(got) != 1 {
		t.Fatalf("rows %q, want the one volume", got)
	}
	if out := h.m.View(); strings.Contains(out, "nightly") {
		t.Errorf("the list shows volume media's secret in the ID of nightly-db:\n%s", out)
	}
	h.keys("enter")
	if out := h.m.View(); strings.Contains(out, "no longer exists") || !strings.Contains(out, "Plugin Health") || strings.Contains(out, "nightly") {
		t.Errorf("the detail of a volume that exists, its ID shown scrubbed:\n%s", out)
	}
	h.keys("esc", "D")
	if out := h.m.View(); strings.Contains(out, "nightly") || !strings.Contains(out, "[REDACTED]-db") {
		t.Errorf("the delete's question should name the volume as the list shows it, scrubbed:\n%s", out)
	}
	h.keys("tab", "enter")
	if _, err := e.Volume(ctx, "nightly-db"); err == nil || h.m.status.failed {
		t.Errorf("delete confirmed: the volume is still there (read: %v), the status line says %q", err, h.m.status.text)
	}
}
