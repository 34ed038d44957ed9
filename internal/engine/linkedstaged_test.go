package engine

import (
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
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
// stuck at unpublishing), and the other claim's mount was at stake.
func TestLinkToAnotherClaimsTargetAtANodeStagedClaimIsNotFollowed(t *testing.T) {
	h := newHostpathEngine(t)
	other := h.claimNew(t, "w", "b", "single-node-writer")
	sv := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with NodePublishVolume unavailable succeeded")
	}
	h.faults.Clear()
	claims, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("v") })
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims of v %+v, %v; want one", claims, err)
	}
	target := claims[0].TargetPath
	if err := os.Symlink(other.TargetPath, target); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(target)
	h.e.Reconcile(h.ctx) // reports the claim rolled back over the link
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("second reconcile: %+v, %v; want nothing to do (the claim settled)", rep.Problems, err)
	}
	if n := h.faults.Calls(csi.RPCNodeUnpublishVolume); n != 0 {
		t.Errorf("NodeUnpublishVolume sent %d times through the link to alloc b's target; want none", n)
	}
	claims, _ = viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("v") })
	if len(claims) != 0 {
		t.Errorf("claims of v after two passes %+v; want the claim rolled back, not stuck", claims)
	}
	if _, err := h.e.Release(h.ctx, "w", "b"); err != nil {
		t.Errorf("release b: %v", err)
	}
}
