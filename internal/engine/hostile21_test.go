package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin restarted with other node limits in NodeGetInfo (another accessible topology, a
// max_volumes_per_node the volumes on the node already pass) while claims hold volumes here:
// the claims stand (they are mounted), but the change is the plugin-capabilities event that
// a node ID change gets, naming the old and new limit and the volumes on the node it rules
// out, so the user learns of it before a later claim of them is refused. Before, nothing was
// said: the event was made only for other capabilities or another node ID.
func TestNodeLimitsChangeIsAnEventNamingTheVolumesOnTheNode(t *testing.T) {
	t.Parallel()
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	for _, tc := range []struct {
		name string
		edit func(*csitest.MemConfig)
		want []string
	}{
		{"topology", func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}} },
			[]string{"{zone=b}", "{zone=a}", `"v1"`, `"v2"`}},
		{"max_volumes_per_node", func(c *csitest.MemConfig) { c.MaxVolumes = 1 },
			[]string{"max_volumes_per_node is now 1", "was 0", "2 volume(s)", `"v1"`, `"v2"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
			h.create(volume("v1"))
			h.create(volume("v2"))
			h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
			h.claim(ClaimRequest{VolumeID: "v2", Alloc: "a"})

			h.restartWith(tc.edit)
			evs := h.capabilityEventsSeenByAProbe()
			if len(evs) != 1 {
				t.Fatalf("plugin-capabilities events after a restart with another %s = %+v; want one", tc.name, evs)
			}
			for _, want := range tc.want {
				if !strings.Contains(evs[0].Message, want) {
					t.Errorf("the event %q does not say %s", evs[0].Message, want)
				}
			}
			if live := h.liveClaims("v1"); len(live) != 1 {
				t.Errorf("claims of v1 after the restart = %+v, want the one it had", live)
			}
		})
	}
}

// A plugin whose Probe answers ready=false, for ever: its volumes cannot take claims by
// volctl's own words (its health is "not ready", not healthy; docs/json.md's schedulable is
// "its plugin was healthy when last probed") and by Nomad's, whose scheduler places no claim
// on a node whose plugin's Probe says not ready. Every view of the volume says so, and why:
// the volume list, its status and the dashboard. Before, they said "yes", counting only that
// the Probe answered.
func TestVolumesOfAPluginThatIsNotReadyAreNotSchedulable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	notReady := false
	h.mem.SetReady(&notReady)
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Health() != PluginNotReady {
		t.Fatalf("plugin status = %+v, want one plugin, not ready", ps)
	}
	plugin := &ps[0]
	const want = "no: plugin not ready"

	vols, err := h.e.Volumes(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 1 || vols[0].Schedulable || vols[0].Schedulability(plugin).String() != want {
		t.Errorf("volume list = %+v (schedulability %q), want v not schedulable: %q", vols, vols[0].Schedulability(plugin), want)
	}
	// The list as `volume ls` words it, which has the plugins' health of its own read only.
	if got := vols[0].Schedulability(nil).String(); got != want {
		t.Errorf("volume list without the plugin's status: schedulability %q, want %q", got, want)
	}
	info, err := h.e.Volume(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	s := info.Schedulability()
	if info.Schedulable || s.String() != want || !strings.Contains(s.Sentence(), `its plugin "mem"`) || !strings.Contains(s.Sentence(), "not ready") {
		t.Errorf("volume status: schedulable %v, %q (%q); want %q, naming the plugin", info.Schedulable, s, s.Sentence(), want)
	}
	d, err := h.e.Dashboard(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Volumes) != 1 || d.Volumes[0].Schedulable {
		t.Errorf("dashboard volumes = %+v, want v not schedulable", d.Volumes)
	}

	// Ready again: schedulable again.
	h.mem.SetReady(nil)
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	if info, err := h.e.Volume(h.ctx, "v"); err != nil || !info.Schedulable {
		t.Errorf("volume status once the plugin is ready = schedulable %v, %v; want schedulable", info.Schedulable, err)
	}
}

// Two plugin IDs registered on one socket (one process, one storage) list the same snapshots:
// `snapshot list` of the second shows the first's recorded snapshot as one of its own that
// volctl does not record, and `snapshot delete` through the second ID took it for such a
// plugin snapshot: it deleted it (the first ID's recorded snapshot, someone's backup) and left
// the first ID's record of a snapshot gone. It is refused as a conflict naming the ID that
// records it and the command that deletes it, nothing sent.
func TestDeleteSnapshotThroughASocketMateOfTheIDThatRecordsItIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	snap := h.snapshot("nightly")
	h.registerPlugin("mem2", h.socket)
	h.faults.ResetCounts()

	err := h.e.DeleteSnapshot(h.ctx, "mem2", snap.ID, nil)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("delete through the socket mate of the ID that records the snapshot = %v, want a conflict", err)
	}
	for _, want := range []string{`plugin "mem"`, "volctl volume snapshot delete mem " + snap.ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if n := h.faults.Count(csi.RPCDeleteSnapshot).Calls; n != 0 {
		t.Errorf("DeleteSnapshot sent %d times", n)
	}
	if !slices.ContainsFunc(h.mem.Snapshots(), func(s csi.Snapshot) bool { return s.ID == snap.ID }) {
		t.Errorf("the plugin no longer has snapshot %q", snap.ID)
	}
	// The ID that records it deletes it.
	if err := h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, nil); err != nil {
		t.Fatalf("delete through the ID that records it: %v", err)
	}
}

// capabilityEventsSeenByAProbe probes the harness's plugin (plugin status), which fingerprints
// it again after a restart, and returns the plugin-capabilities events.
func (h *harness) capabilityEventsSeenByAProbe() []EventInfo {
	h.t.Helper()
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		h.t.Fatal(err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-capabilities"})
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}
