package engine

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A claim whose NodePublishVolume the plugin failed after the attempts (UNAVAILABLE) is left
// node-staged, its record holding the plugin's error answer. A link put at its target since (by
// hand, by another program) is not the plugin's answer: reconcile must not send
// NodeUnpublishVolume through it (the plugin would follow it and unmount whatever is mounted
// where it leads), nor blame the plugin. The claim is rolled back, the link left for its owner.
func TestLinkAtANodeStagedClaimsTargetAfterAFailedPublishIsNotFollowed(t *testing.T) {
	elsewhere := t.TempDir()
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
	target := live[0].TargetPath
	if err := os.Symlink(elsewhere, target); err != nil {
		t.Fatal(err)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	if n := h.faults.Calls(csi.RPCNodeUnpublishVolume); n != 0 {
		t.Errorf("NodeUnpublishVolume sent %d times through a link put at the target of a claim whose NodePublishVolume the plugin answered with an error; want none", n)
	}
	var said string
	for _, p := range rep.Problems {
		said += p.Message + "\n"
	}
	if strings.Contains(said, "did not publish") || strings.Contains(said, "cut off before it checked") {
		t.Errorf("reconcile blames the plugin's answer or a volctl cut off for a link the record cannot give it:\n%s", said)
	}
	if !strings.Contains(said, "NodePublishVolume's failure (Unavailable)") || !strings.Contains(said, "rm "+target) {
		t.Errorf("reconcile said:\n%s\nwant it to name the failure the record holds and say to remove the link", said)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after reconcile %+v; want the claim rolled back", live)
	}
	if dest, err := os.Readlink(target); err != nil || dest != elsewhere {
		t.Errorf("the link at the target: %q, %v; want it left as it was, for its owner to remove", dest, err)
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
