package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A claim of volume v waits for the plugin's controller lock while the plugin restarts stating
// another topology ({zone=a, rack=2}, was {zone=a, rack=1}). v is accessible from zone=a: the
// new topology admits it, and so does admission against it (checkNode asks v's topology and the
// count). Another volume, w, accessible from rack=1 only, stands on the node with a claim of its
// own: nothing unmounts it, and only a new claim of w would be refused (standingOutsideTopology).
// admitsAll asked every volume on the node to be accessible from the new topology, so v's claim
// was rolled back for w's topology, advising "claim the volume again", which admission then
// took: the refusal-for-nothing TestClaimIsNotRefusedForATopologyThatStillAdmitsTheVolume was
// to end. Found by helper review64 (own3), in this round's change.
func TestClaimIsNotRefusedForAnotherStandingVolumesTopology(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a", "rack": "1"}}
	})
	h.mem.Reconfigure(func(c *csitest.MemConfig) {
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"rack": "1"}}
	})
	h.create(volume("w"))
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "x"})
	h.mem.Reconfigure(func(c *csitest.MemConfig) {
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	})
	h.create(volume("v"))

	done, unlock := claimWaitingForTheControllerLock(t, h)
	h.restartWith(func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a", "rack": "2"}}
	})
	unlock()
	err := <-done
	if err != nil {
		t.Errorf("claim of v (accessible from zone=a), its plugin restarted stating {zone=a, rack=2} meanwhile = %v;\nwant it published: the new topology admits v, and w's standing claim is no reason to refuse it", err)
	}
	if err != nil {
		// What the refusal advised: claim again. Admission against the new limits takes it.
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
			t.Logf("the claim again: %v", err)
		} else {
			t.Errorf("the claim again, as the refusal advised, was admitted at once: the refusal refused nothing admission refuses")
		}
	}
}
