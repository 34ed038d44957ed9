package engine

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegisterWithATopologyThroughAPluginWithoutAccessibilityConstraints: `volume create` with
// a topology_request through a plugin without the VOLUME_ACCESSIBILITY_CONSTRAINTS plugin
// capability is refused before anything is sent (takesTopology), because such a plugin's node
// states no topology and the volume would never be claimable. `volume register` of the same
// topology_request through the same plugin is taken: exit 0, recorded accessible only from
// {zone=a} (volumeTopologies reads topology_request.required), every claim refused on this
// host, and the only way out volume status (and the register's warning) gives is "restart
// the plugin with a topology the volume is accessible from", which cannot be followed: the
// plugin takes no topology at all. Correct behaviour: the registration is refused as the
// create is (naming the plugin, the capability, and saying to leave topology_request out),
// or at the least the way out it words is one that works (deregister and register without
// topology_request), not a restart of a plugin that cannot state a topology.
// Found by helper review79 (topology).
func TestRegisterWithATopologyThroughAPluginWithoutAccessibilityConstraints(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // the default plugin: no topology, no VOLUME_ACCESSIBILITY_CONSTRAINTS
	h.mem.AddVolume(csi.Volume{ID: "ext-z", CapacityBytes: 1 << 30})
	sv := registered("z", "ext-z")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	_, err := h.e.RegisterVolume(h.ctx, sv)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "VOLUME_ACCESSIBILITY_CONSTRAINTS") || !strings.Contains(err.Error(), "leave topology_request out of the spec") {
		t.Fatalf("register of a topology_request through a plugin that takes no topology: %v; want it refused as the create is, naming the capability and the topology_request to leave out", err)
	}
	if _, gerr := h.e.Volume(h.ctx, "z"); gerr == nil {
		t.Errorf("register refused (%v) but volume z is recorded", err)
	}
	// Followed: without topology_request, registered and claimable.
	sv.TopologyRequest = nil
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("register without topology_request, as advised: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "z", Alloc: "web-0"})
}

// TestCreateAnsweredWithTheRequisiteTopologyKeyInAnotherCaseIsKept: the CSI spec says topology
// keys are case-insensitive ("Keys MUST be case-insensitive. Meaning the keys "Zone" and "zone"
// MUST not both exist"), and volctl's own spec checks say so too (two keys differing only in
// case are refused as one key). A plugin that spells its key "Zone" everywhere (its
// NodeGetInfo, its CreateVolume answer) is sent a requisite {zone=a} from the user's spec and
// answers a volume accessible from {Zone=a}: within the requisite. csi's topologiesOverlap
// compares the keys byte for byte, so volctl refuses the answer as "outside the requisite
// topology {zone=a}", blames the plugin, and deletes the volume it made where it was asked.
// Correct behaviour: keys compared case-insensitively (in the requisite check, as in
// admission's match), the volume recorded, and claimable on the plugin's node in Zone a.
// Found by helper review79 (topology).
func TestCreateAnsweredWithTheRequisiteTopologyKeyInAnotherCaseIsKept(t *testing.T) {
	t.Parallel()
	zoneA := &spec.Topology{Segments: map[string]string{"Zone": "a"}}
	h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
	sv := volume("v")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("create of a volume requiring {zone=a}, answered accessible from {Zone=a} (the same key: CSI topology keys are case-insensitive): %v; "+
			"want it created (the plugin keeps %d volume(s))", err, h.pluginVolumeCount())
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
}

// TestTopologyRequestChangeRefusalSaysWhatChanged: a registration again whose
// topology_request.required names another zone than the one recorded is refused, as Nomad
// refuses it, but the refusal words each side by its counts only: "topology_request cannot be
// changed (it is 1 required, 0 preferred, the spec says 1 required, 0 preferred)". Both sides
// read the same, so the user is told of a change and shown none, and cannot tell which
// topology the record holds (the one to put back in the spec to have the registration taken).
// Every other field's refusal names the values (parameters name the key and both values).
// Correct behaviour: the refusal names both topologies ({zone=a} and {zone=b}).
// Found by helper review79 (topology).
func TestTopologyRequestChangeRefusalSaysWhatChanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}} })
	h.mem.AddVolume(csi.Volume{ID: "ext-r", CapacityBytes: 1 << 30})
	sv := registered("r", "ext-r")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "b"}}}}
	_, err := h.e.RegisterVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("register again with another required topology: %v; want a conflict", err)
	}
	// Worded as volctl words topologies anywhere: {zone=a}, {"zone"="a"} or zone = "a".
	names := func(value string) bool {
		return regexp.MustCompile(`zone"?\s*=\s*"?` + value + `\b`).MatchString(err.Error())
	}
	if !names("a") || !names("b") {
		t.Errorf("register again changing topology_request.required from {zone=a} to {zone=b} refused as %q; want the refusal to name both topologies, not their counts alone", err)
	}
}
