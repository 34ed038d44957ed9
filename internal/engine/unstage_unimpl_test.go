package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin that advertises STAGE_UNSTAGE_VOLUME but answers NodeStageVolume and
// NodeUnstageVolume with UNIMPLEMENTED: the claim's rollback cannot unstage, and no retry
// would. Before, the rollback stopped there and the claim held the volume (and its
// attachment) for a reconcile that could never finish, with advice for a plugin that is gone.
// Now the mount table decides, as for a plugin that lost the capability: nothing is mounted,
// so the staging record is dropped, the volume detached and the claim rolled back.
func TestUnstageUnimplementedDespiteTheCapability(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Unimplemented)
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Unimplemented)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), "NodeStageVolume: Unimplemented") || !strings.HasSuffix(err.Error(), "(the claim was rolled back)") {
		t.Fatalf("claim through a plugin that cannot stage = %v, want it rolled back", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the rollback = %+v, want none", live)
	}
	if st, ok := h.staging("v"); ok {
		t.Errorf("staging row after the rollback: %+v", st)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Errorf("still attached to %v after the rollback", nodes)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile after the rollback = %+v, %v", rep, err)
	}
}

// The same answer for a staging that is mounted: the record stays, and the error names the
// mount and the plugin's answer, for reconcile once it is unmounted by hand.
func TestUnstageUnimplementedKeepsAMountedStaging(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Unimplemented)
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), st.StagingPath+" is still mounted") ||
		!strings.Contains(err.Error(), "answered NodeUnstageVolume: Unimplemented") {
		t.Fatalf("release with the staging mounted = %v, want it kept, naming the mount and the answer", err)
	}
	if got, ok := h.staging("v"); !ok || !got.Staged {
		t.Fatalf("staging record after the refused unstage = %+v (found %v), want it kept", got, ok)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims = %+v, want the claim held on the release path", live)
	}
}
