package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestHostRenamedUnderATopologyKeyedByNodeID: a plugin whose topology is its node ID, as
// volctl's hostpath plugin's is (topology.hostpath.volctl.dev/node=NODE-ID, started with
// --node-id $(hostname) as its help shows), on a host renamed and rebooted: the plugin comes
// back as node n2, in topology n2, and its volume made on n1 is accessible only from n1.
// Reconcile's restore is refused (round 35: nothing mounted on a node the plugin says cannot
// reach the volume), and so is a new claim. The refusals said to restart the plugin "with a
// topology the volume is accessible from", which names no flag of hostpath's, and, through a
// plugin that attaches, to release the claim "then claim the volume again, which attaches node
// n2": followed, that claim was refused by the topology, the volume left unusable here. Now each
// says the topology is the node ID, which node the volume was made on, and to start the plugin
// with node ID n1 again (--node-id n1); done, the next reconcile restores the claim (the honest
// way out, shown working). A topology that is not a node ID (zones) is not worded so.
func TestHostRenamedUnderATopologyKeyedByNodeID(t *testing.T) {
	t.Parallel()
	t.Run("no attach", func(t *testing.T) { t.Parallel(); hostRenamed(t, false) })
	t.Run("attach", func(t *testing.T) { t.Parallel(); hostRenamed(t, true) })
}

func hostRenamed(t *testing.T, attach bool) {
	const key = "topology.hostpath.volctl.dev/node"
	at := func(node string) *spec.Topology { return &spec.Topology{Segments: map[string]string{key: node}} }
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.NodeID, c.Topology, c.CreateTopology = "n1", at("n1"), at("n1")
		c.Controller.PublishUnpublishVolume = attach
	})
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID, c.Topology = "n2", at("n2") })

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile with the plugin as node n2 = %+v, %v; want the claim's restore refused", rep, err)
	}
	wayOut := []string{`node ID (` + key + `)`, `made on node "n1"`, `start plugin "mem" with node ID "n1" again`, "--node-id n1"}
	msg := rep.Problems[0].Message
	for _, want := range append(wayOut, "volctl volume release v --alloc a") {
		if !strings.Contains(msg, want) {
			t.Errorf("reconcile's problem does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "then claim the volume again") {
		t.Errorf("reconcile's problem advises claiming the volume again on node n2, which its topology refuses:\n%s", msg)
	}
	if n := h.mem.CallCount(csi.RPCNodeStageVolume); n != 0 {
		t.Errorf("NodeStageVolume sent %d times on node n2", n)
	}

	// A new claim of another volume made on n1 is refused saying the same way out.
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID, c.Topology = "n1", at("n1") })
	h.create(volume("w", capab(spec.SingleNodeWriter)))
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID, c.Topology = "n2", at("n2") })
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a claim of w, made on n1, with the plugin as node n2: %v; want a conflict", err)
	}
	for _, want := range wayOut {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the claim's refusal does not say %q:\n%v", want, err)
		}
	}

	// The way out said: the plugin as node n1 again restores the claim.
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID, c.Topology = "n1", at("n1") })
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the plugin as node n1 again: %+v, %v; want the claim restored", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Degraded {
		t.Errorf("claims after the restore = %+v; want a's, restored", live)
	}
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
}

// A topology that is not the node ID (a zone) is not said to be one.
func TestZoneTopologyRefusalNamesNoNodeID(t *testing.T) {
	t.Parallel()
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.restartWith(func(c *csitest.MemConfig) {
		c.NodeID, c.Topology = "node-2", &spec.Topology{Segments: map[string]string{"zone": "b"}}
	})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !errors.Is(err, ErrConflict) || strings.Contains(err.Error(), "node ID") {
		t.Errorf("a claim of v, in zone a, with the plugin in zone b: %v; want a conflict that says nothing of a node ID", err)
	}
}
