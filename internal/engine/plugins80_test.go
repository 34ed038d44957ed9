package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestNodeLimitLoweredBelowTheVolumesOnTheNodeAdviceWorks: node plugin "mem" states
// max_volumes_per_node 2 and has v1 and v2 on the node; it restarts stating 1. A claim of v3 is
// refused, "node has 2 ...; release one of them first". Followed (v1 released), the claim is
// refused again, now "has 1: volume v2": one release was not enough, as the node held more
// volumes than the lowered limit. checkNode's advice (admission.go) always says "one of them",
// whatever the excess. Correct: the refusal says how many must leave the node (here both, the
// count minus the limit plus one), so following it admits the claim.
// Found by helper review80 (plugins).
func TestNodeLimitLoweredBelowTheVolumesOnTheNodeAdviceWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MaxVolumes = 2 })
	h.create(volume("v1"))
	h.create(volume("v2"))
	h.create(volume("v3"))
	h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
	h.claim(ClaimRequest{VolumeID: "v2", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.MaxVolumes = 1 })

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v3", Alloc: "b"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "max_volumes_per_node") {
		t.Fatalf("premise: claim of v3 over the lowered limit: %v; want a conflict naming max_volumes_per_node", err)
	}
	if strings.Contains(err.Error(), "release one of them first") {
		// Follow the advice as given, to show it does not work.
		h.release("v1", "a")
		_, again := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v3", Alloc: "b"})
		t.Fatalf("refusal advised %q; followed (v1 released), the claim of v3: %v; want the refusal to say two volumes must leave the node",
			"release one of them first", again)
	}
	if !strings.Contains(err.Error(), "2 of them") && !strings.Contains(err.Error(), "both") {
		t.Errorf("refusal %v; want it to say how many of the node's volumes must be released (2)", err)
	}
	// Followed: both released, the claim of v3 goes.
	h.release("v1", "a")
	h.release("v2", "a")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v3", Alloc: "b"}); err != nil {
		t.Errorf("claim of v3 once the two volumes left the node, as advised: %v", err)
	}
}
