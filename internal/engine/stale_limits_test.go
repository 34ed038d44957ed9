package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A plugin restarted between commands with other node limits in NodeGetInfo: the stored
// fingerprint, taken before the restart, lets a claim through that the plugin's limits now
// refuse. A claim's probe of the plugin, before admission, fingerprints the restarted plugin,
// and admission refuses the claim (a conflict naming the limit) with nothing admitted. A claim
// admitted from the stored fingerprint (the probe could not reach the plugin then, or an older
// volctl admitted it) has the limits applied again once its connection has fingerprinted the
// plugin, before any RPC: it is refused the same way and rolled back, rather than published past
// max_volumes_per_node or off the volume's topology (or left for a reconcile whose
// ControllerPublishVolume the plugin keeps refusing).
func TestClaimAppliesNodeLimitsStatedAfterARestart(t *testing.T) {
	t.Parallel()
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
		for _, admitted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, admitted before %t", tc.name, admitted), func(t *testing.T) {
				h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
				h.create(volume("v1"))
				h.create(volume("v2"))
				h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
				p := h.restartPlugin(func(c *csitest.MemConfig) { c.Topology = zoneA; tc.edit(c) }, "v1", "v2")

				var err error
				if admitted {
					// As Claim does, under the volume lock, with a probe that did not reach the plugin.
					unlock := h.lockVolume("v2")
					cl, v, ld, _, aerr := h.e.admit(h.ctx, ClaimRequest{VolumeID: "v2", Alloc: "b"}, true, &claimProbe{plugin: "mem"})
					if aerr != nil {
						unlock()
						t.Fatalf("admission from the stored fingerprint: %v", aerr)
					}
					_, err = h.e.driveClaim(h.ctx, cl, v, ld, store.OutcomeRolledBack)
					unlock()
				} else {
					_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v2", Alloc: "b"})
				}
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "rolled back") != admitted {
					t.Fatalf("claim past the limits the restarted plugin states = %v\nwant a conflict saying %q, rolled back %t", err, tc.want, admitted)
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
}
