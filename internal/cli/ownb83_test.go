package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestClaimAdmittedThroughAPluginNotFingerprintedYetIsNotPublishedOutsideTheVolumesTopology:
// volume "zt" was created requiring {zone=a} through plugin "mem". The plugin was deregistered
// with --force (the volume kept) and registered again with an exec block the agent has not
// started: the record has no fingerprint. A claim now is admitted without the topology rule
// (checkNode skips a plugin never fingerprinted, trusting that "the publish's connection
// fingerprints it and judges what it states") and, the socket down, left taken for
// `volctl reconcile`. The plugin then comes up on a node in {zone=b}. Reconcile's publish of
// that claim runs no admission re-check (recheckAdmission returns at once for a claim admitted
// by an earlier command, ld == nil), so the claim is published on a node the volume is not
// accessible from, and reconcile reports "published": what the same claim made one command
// later is refused for ("accessible only from topology {zone=a}"). Before the change the claim
// was refused at admission. Correct behaviour: a claim admitted without a topology verdict is
// judged when its plugin is first fingerprinted (the publish's connection, reconcile's
// included): refused/rolled back as outside the volume's topology, never published there.
// Found by helper review83 (ownb).
func TestClaimAdmittedThroughAPluginNotFingerprintedYetIsNotPublishedOutsideTheVolumesTopology(t *testing.T) {
	h, socket := zoneVolumeThroughAPluginNotFingerprinted(t)
	// Refused at admission, nothing claimed, whether its node is in the topology not known; or,
	// if left taken for reconcile, judged there by what the plugin states (below).
	_, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "zt", Alloc: "a1"})
	if err == nil || !strings.Contains(err.Error(), "left taken") && !strings.Contains(err.Error(), "has not stated its node's yet") {
		t.Fatalf("claim with the plugin not up yet: %v; want it refused until the plugin states its topology, or left taken for reconcile", err)
	}
	// The plugin starts, on a node in {zone=b}.
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}} })
	csitest.ServeAt(t, socket, csitest.WithServer(h.mem))
	t.Cleanup(func() { _ = h.mem.UnmountAll() })

	rep, err := h.e.Reconcile(h.ctx)
	cls, cerr := h.e.Claims(h.ctx)
	if cerr != nil {
		t.Fatalf("claims: %v", cerr)
	}
	for _, cl := range cls {
		if cl.VolumeID == "zt" && cl.State == string(store.ClaimPublished) {
			t.Errorf("volume zt, accessible only from topology {zone=a}, was published for alloc a1 on plugin mem's node in {zone=b} (reconcile: %+v, %v); "+
				"want the claim judged by the topology the plugin now states and not published there", rep.Actions, err)
		}
	}
}

// TestPluginRegistrationDoesNotMergeARegisteredVolumesTopologyKeys: volume "rv" is registered
// requiring the topology {Zone=a, ZONE=b} (two keys in two cases: `volume register` only warns,
// "which volctl matches as it is") through plugin "mem", whose node was in {rack=r1} then (no key to respell to).
// Matched as it is, it is outside a node in {zone=a}: ZONE=b folds to zone, whose value is a.
// The plugin is then registered again on a node in {zone=a}. The registration now respells its
// volumes' topologies as the node spells its keys (respellVolumesAsNode, spelledAsNode), and
// spelledAsNode renames BOTH keys to "zone" (its "taken" check reads the original segments, not
// the ones already renamed): the stored requirement becomes one segment, {zone=a} or {zone=b}
// by map order. A registration that changed nothing the user wrote silently rewrites what the
// volume requires, and half the time makes it schedulable (and exported to Nomad) on a node it
// was not accessible from. Correct behaviour: a respelling never merges two keys of one
// topology (only a key with no other key of its fold in the topology is renamed), so the
// volume keeps both segments and its verdict on this node.
// Found by helper review83 (ownb).
func TestPluginRegistrationDoesNotMergeARegisteredVolumesTopologyKeys(t *testing.T) {
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"rack": "r1"}}
	})
	made, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "made", Name: "made", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "made", false); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Zone": "a", "ZONE": "b"}
	if _, err := h.e.RegisterVolume(h.ctx, spec.Volume{ID: "rv", Name: "rv", Type: "csi", PluginID: "mem", ExternalID: made.ExternalID,
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: want}}}}); err != nil {
		t.Fatalf("precondition: register requiring {Zone=a, ZONE=b}: %v", err)
	}
	if info, err := h.e.Volume(h.ctx, "rv"); err != nil || info.TopologyRequest == nil || len(info.TopologyRequest.Required) != 1 || len(info.TopologyRequest.Required[0].Segments) != 2 {
		t.Fatalf("precondition: volume rv recorded requiring {Zone=a, ZONE=b}: %v %+v", err, info.TopologyRequest)
	}
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil || len(ps) != 1 || ps[0].NodeSocket == "" {
		t.Fatalf("precondition: plugin status: %v (%+v)", err, ps)
	}
	// The plugin, restarted on a node in {zone=a}, is registered again.
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}} })
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: ps[0].NodeSocket}); err != nil {
		t.Fatalf("precondition: register plugin mem again, its node in {zone=a}: %v", err)
	}
	info, err := h.e.Volume(h.ctx, "rv")
	if err != nil || info.TopologyRequest == nil || len(info.TopologyRequest.Required) != 1 {
		t.Fatalf("volume rv: %v %+v", err, info.TopologyRequest)
	}
	if got := info.TopologyRequest.Required[0].Segments; len(got) != len(want) {
		t.Errorf("plugin mem registered again rewrote volume rv's required topology {Zone=a, ZONE=b} to %v (schedulable here now: %v): "+
			"want its two segments kept, and the volume still outside the node in {zone=a}", got, info.Schedulable)
	}
}
