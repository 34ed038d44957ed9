package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestReconcileReportsAClaimItReleasedAsReleased: a reconcile pass lists a claim left on its
// way to published (node-staged, its NodePublishVolume unavailable); before the pass has the
// volume's lock, the alloc's `volume release` (another volctl) marks the claim releasing and is
// left for reconcile (NodeUnstageVolume unavailable). The pass then drives the claim, which
// drive takes on as the release it now is, and frees it, but reports "published claim ... (was
// node-staged)": the user and the agent's log are told the alloc's volume was published when
// it was released, the claim gone. The pass must report what it did from the claim as it read
// it under the lock: released. Found by helper review75.
func TestReconcileReportsAClaimItReleasedAsReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with NodePublishVolume unavailable succeeded")
	}
	h.faults.Clear()
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].AtRest() || live[0].Releasing {
		t.Fatalf("claims after the claim left for reconcile = %+v; want one on its way to published", live)
	}
	inner := h.mounts
	releasedOnce := false
	h.open(Config{Mounts: mountsFunc(func(dir string) (map[string]bool, error) {
		m, err := inner.MountsUnder(dir)
		if !releasedOnce {
			// After the pass listed the claims, before it locks the volume: the alloc's
			// release, by another volctl, left for reconcile.
			releasedOnce = true
			h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Unavailable)
			if _, rerr := h.e.Release(h.ctx, "v", "a"); rerr == nil {
				t.Error("the release with NodeUnstageVolume unavailable succeeded")
			}
			h.faults.Clear()
		}
		return m, err
	})})
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the reconcile = %+v; want the release finished", live)
	}
	for _, a := range rep.Actions {
		if a.Kind == "published" || strings.Contains(a.Message, "published claim") {
			t.Errorf("reconcile reported %q (%s) of a claim it released, which no longer exists", a.Message, a.Kind)
		}
	}
	if len(rep.Actions) != 1 || rep.Actions[0].Kind != "released" {
		t.Errorf("reconcile actions = %+v; want one saying the claim was released", rep.Actions)
	}
}
