package engine

import (
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// A claim whose NodePublishVolume the plugin failed after the attempts (UNAVAILABLE) is left
// node-staged, its record holding UNAVAILABLE. A link found at its target since cannot be told
// from the plugin's own: UNAVAILABLE may be the answer of a plugin that linked the target and
// failed after (TestLinkAfterAnUnavailablePublishIsUnpublishedFirst), and the claim records
// that its NodePublishVolume may have been sent. Round 30 took it for a hand's, the claim put
// back to controller-published and rolled back with no NodeUnpublishVolume, under what may be
// the plugin's publication. It is taken for the plugin's: reconcile rolls the claim back
// through NodeUnpublishVolume (the plugin's chance to remove its link) before NodeUnstageVolume
// and ControllerUnpublishVolume, says so, blaming no hand, and the claim settles. What the link
// points to is left as it was (the plugin removes the link, not what it leads to). A link put
// at the target of a claim no NodePublishVolume was sent for is still not followed
// (TestClaimOnASymlinkLeftAtTheTargetIsRolledBack), nor one leading to another claim's target
// (TestLinkToAnotherClaimsTargetAtANodeStagedClaimIsNotFollowed).
func TestLinkAtANodeStagedClaimsTargetAfterAFailedPublishIsUnpublishedFirst(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir()
	if err := os.WriteFile(elsewhere+"/keep", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with NodePublishVolume unavailable succeeded")
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimNodeStaged {
		t.Fatalf("claims %+v; want one node-staged", live)
	}
	h.faults.Clear()
	h.mem.ResetCalls()
	target := live[0].TargetPath
	if err := os.Symlink(elsewhere, target); err != nil {
		t.Fatal(err)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	var said string
	for _, p := range rep.Problems {
		said += p.Message + "\n"
	}
	if !strings.Contains(said, `may have reached plugin "mem"`) || strings.Contains(said, "by hand or by another program") {
		t.Errorf("reconcile said:\n%s\nwant it to say a NodePublishVolume may have reached the plugin, blaming no hand", said)
	}
	var order []string
	for _, rpc := range h.rpcs() {
		if rpc == csi.RPCNodeUnpublishVolume || rpc == csi.RPCNodeUnstageVolume || rpc == csi.RPCControllerUnpublishVolume {
			order = append(order, rpc)
		}
	}
	if want := []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume}; !slices.Equal(order, want) {
		t.Errorf("the rollback's teardown calls = %v; want %v", order, want)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after reconcile %+v; want the claim rolled back", live)
	}
	if _, err := os.Stat(elsewhere + "/keep"); err != nil {
		t.Errorf("what the link pointed to: %v; want it untouched", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("second reconcile: %+v, %v; want nothing to do (the claim settled)", rep, err)
	}
}

// Against volctl's own plugin: the link put at the node-staged claim's target leads to another
// claim's mounted target. Following it, NodeUnpublishVolume was refused every pass (the claim
// stuck at unpublishing), and the other claim's mount was at stake. The claim's publish is
// recorded maybe sent: the link is removed unfollowed and NodeUnpublishVolume sent at the
// target (linkAtASentPublishsTarget checks none goes through a link).
func TestLinkToAnotherClaimsTargetAtANodeStagedClaimIsNotFollowed(t *testing.T) {
	t.Parallel()
	linkAtASentPublishsTarget(t, func(t *testing.T, h *hostpathEngine, target, otherTarget string) string { return otherTarget })
}
