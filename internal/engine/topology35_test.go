package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRestoreOutsideTheVolumesTopologyIsRefused: a volume accessible only from zone a, claimed
// on a node in zone a; the host reboots (target and staging gone) and the plugin comes back
// stating zone b (NodeGetInfo accessible_topology). Reconcile's restore sent NodeStageVolume and
// NodePublishVolume on a node the plugin says cannot reach the volume, and reported the claim
// restored. Now nothing is sent: the claim stays held, degraded, and reconcile says which
// topologies, the release that frees it, and that the plugin stating zone a again lets the
// next pass restore it, which it then does (the honest case). A plugin that does not stage
// mounts from the attachment with NodePublishVolume: refused the same way.
func TestRestoreOutsideTheVolumesTopologyIsRefused(t *testing.T) {
	t.Parallel()
	t.Run("staging", func(t *testing.T) { t.Parallel(); restoreOutsideTopology(t, true, csi.RPCNodeStageVolume) })
	t.Run("no staging", func(t *testing.T) { t.Parallel(); restoreOutsideTopology(t, false, csi.RPCNodePublishVolume) })
}

func restoreOutsideTopology(t *testing.T, stages bool, rpc string) {
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Topology, c.CreateTopology, c.Node.StageUnstageVolume = zoneA, zoneA, stages
	})
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.restartWith(func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}} })

	rep, err := h.e.Reconcile(h.ctx)
	if n := h.mem.CallCount(rpc); n != 0 {
		t.Errorf("%s sent %d times to a plugin whose node is in zone b, for a volume accessible only from zone a", rpc, n)
	}
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile = %+v, %v; want the claim's restore reported", rep, err)
	}
	msg := rep.Problems[0].Message
	for _, want := range []string{`"v"`, "{zone=a}", "{zone=b}", `plugin "mem"`, "volctl volume release v --alloc a", "held, degraded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reconcile's problem %q does not say %s", msg, want)
		}
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Degraded {
		t.Fatalf("claims after the refused restore = %+v; want a's held, degraded", live)
	}

	h.restartWith(func(c *csitest.MemConfig) { c.Topology = zoneA })
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the plugin states zone a again: %+v, %v; want the claim restored", rep, err)
	}
	if n := h.mem.CallCount(rpc); n != 1 {
		t.Errorf("%s sent %d times once the plugin states zone a again; want 1", rpc, n)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Degraded {
		t.Errorf("claims after the restore = %+v; want a's, restored", live)
	}
}

// TestNewClaimOutsideTheVolumesTopologyIsRefusedWhileItsClaimsStand: a volume accessible only
// from zone a, claimed and mounted on a node in zone a; the plugin restarts stating zone b.
// The claim stands, mounted (nothing is unpublished or unstaged behind the alloc's back), but a
// new claim of the volume here was admitted, sharing the staging, since admission passed any
// volume already on the node. Now it is refused as a conflict naming both topologies, and the
// standing claim is untouched; released, the volume is refused here as before.
func TestNewClaimOutsideTheVolumesTopologyIsRefusedWhileItsClaimsStand(t *testing.T) {
	t.Parallel()
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}} })

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a new claim of v with the plugin's node in zone b: %v; want a conflict", err)
	}
	for _, want := range []string{`"v"`, "{zone=a}", "{zone=b}", `alloc "a"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim error %q does not say %s", err, want)
		}
	}
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCNodePublishVolume} {
		if n := h.mem.CallCount(rpc); n != 0 {
			t.Errorf("%s sent %d times", rpc, n)
		}
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "a" || live[0].Degraded {
		t.Fatalf("claims after the refusal = %+v; want a's, standing", live)
	}
	h.release("v", "a")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a claim of v once released, the plugin in zone b: %v; want a conflict", err)
	}
}
