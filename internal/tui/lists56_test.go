package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A volume accessible only from a topology its plugin's node is not in takes no claim on this
// host (checkNode), and `volume status` / `volume ls` say "no: outside its topology"
// (EachVolume's nodeOutside). The dashboard's read (engine.Dashboard) built its volumes with
// volumeSummary, which never looked at topologies: its volume list said "yes" of such a volume,
// which a claim then refused, and its detail "no".
func TestDashboardSaysAVolumeOutsideItsTopologyCannotTakeClaims(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngineWith(t, func(cfg *csitest.MemConfig) {
		cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
		cfg.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "b"}} // a plugin that makes it elsewhere
	})
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "in-b", Name: "in-b", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	vols, err := e.Volumes(ctx)
	if err != nil || len(vols) != 1 {
		t.Fatal(vols, err)
	}
	listed := vols[0].Schedulability(nil).String()
	if listed != "no: outside its topology" {
		t.Fatalf("volume status lists in-b as %q; the test expects the engine's list to say it is outside its topology", listed)
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "in-b", Alloc: "x"}); err == nil {
		t.Fatal("a claim of in-b went through: the volume is not outside its topology after all")
	}

	h := newHarness(t, e, Options{})
	row := h.m.tabs[tabVolumes].rows[0]
	if got := row.cells[len(row.cells)-1]; got != listed {
		t.Errorf("the dashboard's SCHEDULABLE of volume in-b is %q, where `volctl volume status` says %q (a claim of it is refused): row %q",
			got, listed, strings.Join(row.cells, " | "))
	}
}

// A plugin deregistered with --force leaves its volumes behind. `volume status` lists each as
// "no: plugin not registered"; the dashboard's list said "no: plugin unhealthy": volumeRows got
// no PluginInfo for a plugin the same read did not find, and VolumeSummary.Schedulability(nil)
// blamed the plugin's health, though the dashboard read every plugin and knew this one was not
// registered, sending the user to a plugin's health that does not exist.
func TestDashboardVolumeOfADeregisteredPluginSaysSo(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.DeregisterPlugin(ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	vols, err := e.Volumes(ctx)
	if err != nil || len(vols) != 1 {
		t.Fatal(vols, err)
	}
	listed := vols[0].Schedulability(nil).String() // what `volume status` lists
	if listed != "no: plugin not registered" {
		t.Fatalf("volume status lists db as %q", listed)
	}

	h := newHarness(t, e, Options{})
	row := h.m.tabs[tabVolumes].rows[0]
	if got := row.cells[len(row.cells)-1]; got != listed {
		t.Errorf("the dashboard's SCHEDULABLE of volume db, whose plugin was deregistered with --force, is %q, where `volctl volume status` says %q: row %q",
			got, listed, strings.Join(row.cells, " | "))
	}
}
