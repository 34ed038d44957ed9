package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// A claim that waited for the controller lock while its plugin restarted allowing more volumes
// per node is published: the limits now admit what the ones before did. Before, checkSockets
// (putsOnNode) refused any change of the node limits, and the claim was rolled back with
// "claim the volume again". A lower limit, or another topology, is still refused
// (TestClaimThatWaitedForTheControllerLockIsHeldToLimitsStatedMeanwhile).
func TestClaimIsNotRefusedForLimitsRaisedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MaxVolumes = 2 })
	h.create(volume("v"))
	done, unlock := claimWaitingForTheControllerLock(t, h)
	h.restartWith(func(c *csitest.MemConfig) { c.MaxVolumes = 8 }) // more room, not less
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("the claim, the only volume on a node whose plugin restarted allowing 8 volumes (was 2) = %v; want it published", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Errorf("v's claims = %+v, want the claim", live)
	}
}
