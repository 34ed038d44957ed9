package tui

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The dashboard probes its plugins live and shows what its next read of the state finds. A
// probe another volctl's write lock kept from being recorded (or a read-only state dir) left
// the dashboard showing the stored health: a plugin the probe found dead shown healthy, and
// its volumes "yes", where `volctl status` beside it shows what its own probe found. The
// dashboard shows its probe's reading where it is newer than the stored one.
func TestDashboardShowsWhatItsProbeFoundWhenItCannotRecordIt(t *testing.T) {
	ctx := context.Background()
	e, stop := realEngine(t)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, e, Options{})
	if got := h.m.tabs[tabVolumes].rows[0].cells; got[len(got)-1] != "yes" {
		t.Fatalf("before: volume row %q; want it schedulable", strings.Join(got, " | "))
	}

	stop() // the plugin dies
	holdStateWriteLock(t, e.StateDir())
	_, cmd := h.m.Update(probeTickMsg{})
	h.run(cmd)

	plugins := h.m.tabs[tabPlugins].rows
	if len(plugins) != 1 || !strings.Contains(strings.Join(plugins[0].cells, " | "), "unhealthy") {
		t.Errorf("plugin row after a probe that found it dead = %q; want unhealthy", strings.Join(plugins[0].cells, " | "))
	}
	if got := h.m.tabs[tabVolumes].rows[0].cells; got[len(got)-1] != "no: plugin unhealthy" {
		t.Errorf("volume row after the probe found its plugin dead = %q; want not schedulable", strings.Join(got, " | "))
	}
	// The volume's detail, read on its own, says what its row says.
	h.keys("1", "enter")
	if d := h.m.detail; d == nil || d.volume == nil {
		t.Fatal("no volume detail open")
	} else if s := d.volume.Schedulability().String(); s != "no: plugin unhealthy" {
		t.Errorf("the volume's detail says %q where its row says \"no: plugin unhealthy\"", s)
	}
}

// holdStateWriteLock takes the state database's write lock (BEGIN IMMEDIATE) on a connection
// of its own, as another volctl in the middle of a write does, until the test ends.
func holdStateWriteLock(t *testing.T, stateDir string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(stateDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.ExecContext(context.Background(), "ROLLBACK")
		c.Close()
		db.Close()
	})
}
