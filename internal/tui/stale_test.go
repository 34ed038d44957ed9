package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestDetailOfAVolumeGoneNeverShowsAnother: the engine finds a volume by its ID or by an
// unambiguous prefix of it (`volume status db` is `db-replica`'s when only it starts so). The
// detail of volume "db", open while "db" is deleted elsewhere, re-read it by its ID on the next
// refresh and got "db-replica": shown under "Volume db", and D in it asked to delete db-replica,
// the volume the user never opened. The detail now says "db" is gone, and acts on nothing.
func TestDetailOfAVolumeGoneNeverShowsAnother(t *testing.T) {
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, cfg)))
	e, err := engine.Open(ctx, engine.Config{
		StateDir: t.TempDir(),
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
	for _, id := range []string{"db", "db-replica"} {
		_, err := e.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}

	h := newHarness(t, e, Options{})
	h.keys("enter") // the detail of "db", the first row
	if d := h.m.detail; d == nil || d.volume == nil || d.volume.ID != "db" {
		t.Fatalf("the detail of db is not open:\n%s", h.m.View())
	}
	if err := e.DeleteVolume(ctx, "db"); err != nil { // elsewhere: another terminal, the agent
		t.Fatal(err)
	}
	h.send(refreshTickMsg{})
	out := h.m.View()
	if d := h.m.detail; d != nil && d.volume != nil && d.volume.ID != "db" {
		t.Errorf("the detail of volume db, deleted, shows volume %q in its place:\n%s", d.volume.ID, out)
	}
	if !strings.Contains(out, `volume "db" no longer exists`) {
		t.Errorf("the detail of a deleted volume does not say it is gone:\n%s", out)
	}
	h.keys("D")
	if h.m.dialog != nil {
		t.Errorf("D in the detail of a deleted volume asks %q", h.m.dialog.a.question())
	}
}
