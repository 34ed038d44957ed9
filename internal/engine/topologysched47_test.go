package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A volume accessible only from a topology its plugin's node is not in takes no new claim on
// this host (checkNode refuses it), and the volume lists say so: Schedulable false, "outside
// its topology", and `volume status` the two topologies and the way out. Before, the list said
// "yes" of a volume every claim of which was refused: after a host renamed (hostpath's
// topology is its node ID), every volume it had. The plugin restarted in the volume's topology,
// it is schedulable again. Judged by the plugin's recorded fingerprint, as admission is.
func TestVolumeOutsideItsPluginsTopologyIsNotSchedulable(t *testing.T) {
	t.Parallel()
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	zoneB := &spec.Topology{Segments: map[string]string{"zone": "b"}}
	h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
	h.create(volume("in-a"))
	h.restartWith(func(c *csitest.MemConfig) { c.CreateTopology = zoneB }) // a plugin that makes it elsewhere
	h.create(volume("in-b"))

	listed := func() map[string]string {
		t.Helper()
		vols, err := h.e.Volumes(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, v := range vols {
			out[v.ID] = v.Schedulability(nil).String()
			if v.Schedulable != (out[v.ID] == "yes") {
				t.Errorf("volume %q listed Schedulable %v, %q", v.ID, v.Schedulable, out[v.ID])
			}
		}
		return out
	}
	if got := listed(); got["in-a"] != "yes" || got["in-b"] != "no: outside its topology" {
		t.Errorf("volume list with the plugin's node in zone a = %v; want in-a yes, in-b outside its topology", got)
	}
	b, err := h.e.Volume(h.ctx, "in-b")
	if err != nil {
		t.Fatal(err)
	}
	s := b.Schedulability()
	if b.Schedulable || s.Why != OutsideTopology {
		t.Errorf("volume status in-b: schedulable %v, %v; want false, outside its topology", b.Schedulable, s)
	}
	for _, want := range []string{"accessible only from topology {zone=b}", `plugin "mem"'s node "node-1" is in {zone=a}`,
		"no new claim of it is admitted on this host", "restart the plugin with a topology the volume is accessible from"} {
		if !strings.Contains(s.Sentence(), want) {
			t.Errorf("volume status in-b's reason %q does not say %q", s.Sentence(), want)
		}
	}
	// What the list says, admission does.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "in-b", Alloc: "x"}); !errors.Is(err, ErrConflict) {
		t.Errorf("claim of in-b: %v, want a conflict", err)
	}
	// A live probe of a healthy plugin (`volctl status`) does not make it schedulable.
	plugins, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	vols, err := h.e.Volumes(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vols {
		if v.ID == "in-b" && v.WithPluginProbed(&plugins[0]).Schedulable {
			t.Errorf("in-b with its plugin probed healthy: schedulable; want not (outside its topology)")
		}
	}

	// The plugin restarted in zone b: the other way round, once a connection fingerprinted it.
	h.restartWith(func(c *csitest.MemConfig) { c.Topology = zoneB })
	h.claim(ClaimRequest{VolumeID: "in-b", Alloc: "x"})
	if got := listed(); got["in-a"] != "no: outside its topology" || got["in-b"] != "yes" {
		t.Errorf("volume list with the plugin's node in zone b = %v; want in-a outside its topology, in-b yes", got)
	}
}
