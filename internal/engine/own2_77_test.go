package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeExpandAtABlockVolumesStagingPathWhileItsClaimIsReleasedSaysItIsABlockVolume: the
// node step of an expansion sent at a block volume's staging path now carries the capability of
// a claim the staging serves (TestNodeExpandAtABlockVolumesStagingPathSaysItIsABlockVolume), but
// expandOnNode picks that claim among those not being released only. A block claim whose
// release stopped at a failing NodeUnstageVolume (its device unpublished, the volume still
// staged, the claim left releasing for reconcile) is the staging's only claim, and an expand
// then sends NodeExpandVolume at the staging path with no volume_capability at all: the plugin
// works the access type out from the path, a directory, takes the raw device for a mounted file
// system and runs a file-system resize on it, the defect the change meant to close. Correct:
// a NodeExpandVolume sent at the staging path of a volume whose claims are block-device ones
// carries access_type block (the capability the staging was made with, which a releasing claim
// still records), or none is sent.
// Found by helper review77 (own2).
func TestNodeExpandAtABlockVolumesStagingPathWhileItsClaimIsReleasedSaysItIsABlockVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Unavailable)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
		t.Fatal("premise: release with a failing NodeUnstageVolume succeeded")
	}
	st, ok := h.staging("v")
	if !ok || !st.Staged {
		t.Fatalf("premise: staging %+v, want the volume still staged", st)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || !live[0].Releasing || live[0].AttachmentMode != spec.BlockDevice {
		t.Fatalf("premise: claims %+v, want alloc a's block claim left releasing", live)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("premise: expand: %v", err)
	}
	for _, r := range h.nodeExpands() {
		if r.VolumePath != st.StagingPath {
			continue
		}
		if c := r.Capability; c == nil || c.Capability.AttachmentMode != spec.BlockDevice {
			t.Errorf("NodeExpandVolume at block volume v's staging path %s, its block claim being released, sent with volume_capability %+v; want access_type block: "+
				"without it the plugin takes the path, a directory, for a mounted file system and resizes one on the raw device", st.StagingPath, c)
		}
	}
}
