package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin restarted between commands with other node limits in NodeGetInfo: admission applies
// the limits of the stored fingerprint, taken before the restart, and lets a claim through that
// the plugin's limits now refuse. Once the claim's connection has fingerprinted the plugin
// again, the limits are applied again before any RPC: the claim is refused as admission would
// have refused it (a conflict naming the limit) and rolled back, rather than published past
// max_volumes_per_node or off the volume's topology (or left for a reconcile whose
// ControllerPublishVolume the plugin keeps refusing).
func TestClaimAppliesNodeLimitsStatedAfterARestart(t *testing.T) {
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	for _, tc := range []struct {
		name string
		edit func(*csitest.MemConfig)
		want string
	}{
		{"max_volumes_per_node", func(c *csitest.MemConfig) { c.MaxVolumes = 1 }, "allows 1 volume(s) per node"},
		{"topology", func(c *csitest.MemConfig) {
			c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}}
		}, "is accessible only from topology {zone=a}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
			h.create(volume("v1"))
			h.create(volume("v2"))
			h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
			p := h.restartPlugin(func(c *csitest.MemConfig) { c.Topology = zoneA; tc.edit(c) }, "v1", "v2")

			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v2", Alloc: "b"})
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rolled back") {
				t.Fatalf("claim past the limits the restarted plugin states = %v\nwant a conflict saying %q, rolled back", err, tc.want)
			}
			if live := h.liveClaims("v2"); len(live) != 0 {
				t.Fatalf("claims of v2 = %+v, want none", live)
			}
			for _, rpc := range volumeRPCs(p) {
				if rpc == "ControllerPublishVolume" || rpc == "NodeStageVolume" || rpc == "NodePublishVolume" {
					t.Errorf("%s sent for the refused claim (RPCs %v)", rpc, volumeRPCs(p))
				}
			}
			// From now on admission itself has the limits the plugin states.
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v2", Alloc: "c"}); !errors.Is(err, ErrConflict) {
				t.Errorf("a second claim of v2 = %v, want admission's conflict", err)
			}
		})
	}
}
