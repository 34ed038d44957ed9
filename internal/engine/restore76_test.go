package engine

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestExpandWithAClaimMidRestoreKeepsItOwed: volume v is held by allocs a and b; b's target was
// lost (a reboot, an unmount) and its restore failed, so b is held degraded, node-staged, for
// the next pass to restore. A `volume expand` answered node_expansion_required then sends
// NodeExpandVolume at a's target alone and clears the debt: expandOnNode counts only claims
// recorded published, and b, mid-restore, is not. The next reconcile restores b with nothing
// owed, so b's target never has its file system grown (at the old size where each target has
// its own device), while status says the volume expanded. A degraded claim is a published
// claim whose mount is being made again: like a published claim whose target is not mounted
// (TestExpandWithOneTargetLostKeepsItOwed), it must keep the debt owed until its restore's
// publish pays it.
// Found by helper review76 (restore).
func TestExpandWithAClaimMidRestoreKeepsItOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	b := h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	h.mounts.markGone(b.TargetPath)
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with NodePublishVolume failing restored b's claim")
	}
	h.faults.Clear(csi.RPCNodePublishVolume)
	var mid store.Claim
	for _, cl := range h.liveClaims("v") {
		if cl.Alloc == "b" {
			mid = cl
		}
	}
	if !mid.Degraded || mid.State == store.ClaimPublished {
		t.Fatalf("precondition: b's claim after its failed restore is %s, degraded %v; want held degraded, not published", mid.State, mid.Degraded)
	}

	h.mem.AnswerNodeExpansionRequired(true)
	h.mem.ResetCalls()
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand: %v", err)
	}
	owedAfterExpand := h.owed("v")
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if paths, _ := nodeExpandsAt(h.mem); !slices.Contains(paths, b.TargetPath) {
		t.Errorf("b's target %s, mid-restore at the expand and restored by reconcile after it, was never sent NodeExpandVolume (sent at %q; owed after the expand %d, now %d): "+
			"the expand cleared the debt with a claim being restored unsent", b.TargetPath, paths, owedAfterExpand, h.owed("v"))
	}
}

// TestStatusSummaryListsANodeExpansionOwedOnAVolumeWhoseClaimIsBeingRestored: volume v's one
// claim lost its target's mount and its restore failed, so the claim is held degraded
// (node-staged, its staging still mounted), and the volume is owed a NodeExpandVolume (it
// failed). The summary's owed work (Owed, passPaysOwed) counts only a claim recorded published
// as keeping the volume here, so it lists nothing for v; yet the next `volctl reconcile`
// drives the degraded claim's restore on and pays the debt (at the restored publish, or at the
// staging), growing a file system the summary said nothing of: what
// TestStatusSummaryListsANodeExpansionOwedOnAPublishedVolume fixed for a published claim. A
// claim being restored is a published claim whose mount a pass makes again: the owed
// node-expand must be listed as reconcile's.
// Found by helper review76 (restore).
func TestStatusSummaryListsANodeExpansionOwedOnAVolumeWhoseClaimIsBeingRestored(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.AnswerNodeExpansionRequired(true)
	h.faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("premise: expand with NodeExpandVolume failing succeeded")
	}
	h.mounts.markGone(a.TargetPath)
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("premise: reconcile with NodePublishVolume failing restored the claim")
	}
	h.faults.Clear(csi.RPCNodePublishVolume, csi.RPCNodeExpandVolume)
	if now := h.liveClaims("v")[0]; !now.Degraded || now.State == store.ClaimPublished {
		t.Fatalf("premise: the claim is %s, degraded %v; want it held degraded", now.State, now.Degraded)
	}
	owedBefore := h.owed("v")
	if owedBefore == 0 {
		t.Fatal("premise: no node expansion owed")
	}
	owed, err := h.e.Owed(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.ContainsFunc(owed, func(w OwedWork) bool { return w.VolumeID == "v" && w.Kind == OwedNodeExpand })

	h.mem.ResetCalls()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	paths, _ := nodeExpandsAt(h.mem)
	if (len(paths) > 0 || h.owed("v") == 0) && !listed {
		t.Errorf("the summary's owed work %+v listed no node-expand of volume \"v\" (owed %d bytes, its claim being restored), "+
			"and the next reconcile paid it (NodeExpandVolume at %q, owed now %d): a file system grown that status said nothing of",
			owed, owedBefore, paths, h.owed("v"))
	}
}
