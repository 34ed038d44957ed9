package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadOfACreatedVolumeAnsweredWithoutATopologyIsPlaceableByNomad: the plugin's
// node states {zone=a} (NodeGetInfo); the create spec requires {Zone=a}, the same topology to
// the CSI spec (keys are case-insensitive) and to volctl, which sends it as the requisite;
// CreateVolume answers with no accessible_topology (a plugin that leaves the OPTIONAL field
// out). The volume's topology is then its spec's topology_request.required (volumeTopologies),
// which volctl admits claims of on this node (spec.SegmentsWithin folds keys): `volume status`
// says "Schedulable = yes". But the create records that required topology as the spec spells
// it: spelledAsNode respells only the answer's accessible topology (finishCreate) and a
// registration's required (registerRound), never a create's. `export nomad`
// (nomad.RegisterSpec: RequiredTopologies) writes topology_request.required {Zone = "a"},
// which Nomad's scheduler compares byte for byte with the node's {zone=a}: it places the
// volume on no node, every job using it unplaceable after the handover, while volctl says it
// is schedulable on this very node. Correct behaviour: as for an answer's topology and a
// registration's, the required topology a created volume is accessible from is recorded (or
// exported) in the node's spelling, so that the file Nomad gets matches where volctl admits.
// Found by helper review83 (topology).
func TestExportNomadOfACreatedVolumeAnsweredWithoutATopologyIsPlaceableByNomad(t *testing.T) {
	node := map[string]string{"zone": "a"}
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: node}
		// A topology of no segments, which volctl drops: the answer states none.
		c.CreateTopology = &spec.Topology{Segments: map[string]string{}}
	})
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "nt", Name: "nt", Type: "csi", PluginID: "mem",
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"Zone": "a"}}}}}); err != nil {
		t.Fatalf("precondition: create requiring {Zone=a}, answered with no topology: %v", err)
	}
	info, err := h.e.Volume(h.ctx, "nt")
	if err != nil || !info.Schedulable {
		t.Fatalf("precondition: volume nt is not schedulable on the plugin's node {zone=a} (%v): %s", err, info.Schedulability())
	}
	if len(info.AccessibleTopology) != 0 {
		t.Fatalf("precondition: the answer's topology was recorded (%v): the volume's topology is not its spec's required", info.AccessibleTopology)
	}
	placeable, src := exportedPlaceable(t, h, "nt", node)
	if !placeable {
		t.Errorf("volume nt, schedulable here on the plugin's node {zone=a}, is exported as below, which Nomad's scheduler (keys compared as bytes) matches on no node "+
			"of this plugin:\n%s", src)
	}
}

// TestExportNomadOfAVolumeCreatedThroughAControllerHalfIsPlaceableByNomad: a split plugin
// (Nomad's usual controller job and node job) whose controller half is registered first, alone.
// The create requires {zone=a}; CreateVolume answers the volume accessible from {Zone=a}, the
// same topology to the CSI spec and to volctl. The answer is respelled as the node spells its
// keys only when the connection knows the node's topology (finishCreate: spelledAsNode of
// c.fp.AccessibleTopology), which a controller half alone does not state, so {Zone=a} is
// recorded as answered. The node half then registers stating {zone=a}: volctl admits claims of
// the volume there (keys fold), `volume status` saying "Schedulable = yes", and `export nomad`
// writes topology_request.required {Zone = "a"}, which Nomad's scheduler compares byte for
// byte with the node's fingerprint {zone=a}: placed on no node, every job using it
// unplaceable after the handover. Correct behaviour: the topology exported is one Nomad
// matches where volctl admits claims, whichever half was registered when the volume was made
// (respelled when the node half first states its topology, or refused/warned at export).
// Found by helper review83 (topology).
func TestExportNomadOfAVolumeCreatedThroughAControllerHalfIsPlaceableByNomad(t *testing.T) {
	ctx := context.Background()
	node := map[string]string{"zone": "a"}
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: node}
	cfg.CreateTopology = &spec.Topology{Segments: map[string]string{"Zone": "a"}}
	backend := csitest.NewMemPlugin(cfg)
	ctrlSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	h := &cliHarness{ctx: ctx, state: filepath.Join(t.TempDir(), "state")}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		t.Fatalf("precondition: register the controller half: %v", err)
	}
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "sv", Name: "sv", Type: "csi", PluginID: "split",
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}}); err != nil {
		t.Fatalf("precondition: create requiring {zone=a} through the controller half, answered {Zone=a}: %v", err)
	}
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatalf("precondition: register the node half: %v", err)
	}
	if info, err := h.e.Volume(ctx, "sv"); err != nil || !info.Schedulable {
		t.Fatalf("precondition: volume sv is not schedulable on the plugin's node {zone=a} (%v): %s", err, info.Schedulability())
	}
	placeable, src := exportedPlaceable(t, h, "sv", node)
	if !placeable {
		t.Errorf("volume sv, schedulable here on the split plugin's node {zone=a}, is exported as below, which Nomad's scheduler (keys compared as bytes) matches on no node "+
			"of this plugin:\n%s", src)
	}
}

// TestClaimThroughAPluginNotFingerprintedYetIsNotSaidOutsideItsTopology: volume "zt" was
// created requiring {zone=a} through plugin "mem", whose node states {zone=a}. The plugin was
// deregistered with --force (the volume kept) and registered again with an exec block the
// agent has not started yet: the new record has no fingerprint (only the driver's name
// pinned), NodeGetInfo never asked. A claim of zt then is refused by admission's topology
// rule (checkNode) as a conflict saying plugin "mem"'s node "" "has no accessible topology
// (NodeGetInfo accessible_topology): the volume cannot be used on this node", advising a
// restart "with a topology the volume is accessible from": none of that is so. Nothing was
// asked of the node, the node is in {zone=a}, and `volume status` itself does not judge a
// plugin never fingerprinted (nodeOutside: judgedTopology). Correct behaviour: a plugin not
// fingerprinted yet is not judged by the topology it has not stated (as checkPublishable
// gives it the benefit of the doubt, and nodeOutside does): refused as not known yet, with the
// way (start the plugin), never told that the volume cannot be used on this node.
// Found by helper review83 (topology).
func TestClaimThroughAPluginNotFingerprintedYetIsNotSaidOutsideItsTopology(t *testing.T) {
	h, _ := zoneVolumeThroughAPluginNotFingerprinted(t)
	_, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "zt", Alloc: "a1"})
	// Refused for what is so: the plugin has stated no topology yet (admitted, the claim was
	// published by a reconcile on whatever node the plugin came up on: ownb83).
	if !errors.Is(err, engine.ErrConflict) || strings.Contains(err.Error(), "has no accessible topology") || !strings.Contains(err.Error(), "has not stated its node's yet") {
		t.Errorf("claim of zt through plugin mem, registered again and never fingerprinted (NodeGetInfo not asked): %v\n"+
			"want no verdict on a topology the plugin has not stated: refused as not known yet", err)
	}
	if cls, _ := h.e.Claims(h.ctx); len(cls) != 0 {
		t.Errorf("claims after the refusal: %+v; want none", cls)
	}
}

// zoneVolumeThroughAPluginNotFingerprinted makes volume "zt", requiring {zone=a}, through plugin
// "mem" (whose node is in {zone=a}), then deregisters mem with --force, stops it, and registers
// it again with an exec block the agent has not started: its record has no fingerprint. It
// returns the harness and mem's socket.
func zoneVolumeThroughAPluginNotFingerprinted(t *testing.T) (*cliHarness, string) {
	t.Helper()
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	})
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "zt", Name: "zt", Type: "csi", PluginID: "mem",
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}}); err != nil {
		t.Fatalf("precondition: create requiring {zone=a}: %v", err)
	}
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil || len(ps) != 1 || ps[0].NodeSocket == "" {
		t.Fatalf("precondition: plugin status: %v (%+v)", err, ps)
	}
	socket := ps[0].NodeSocket
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("precondition: plugin deregister --force: %v", err)
	}
	h.stop()
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket,
		Exec: &spec.Exec{Command: "/usr/local/bin/mem-csi"}}); err != nil {
		t.Fatalf("precondition: register mem again with an exec block, not started yet: %v", err)
	}
	return h, socket
}
