package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestOwedNodeExpansionOfAVolumeWhoseClaimIsReleasingIsWhatReconcileDoes: volume v, published
// for alloc a, owes a node-only expansion to 4MiB (its NodeExpandVolume failed); then a's
// release fails at NodeUnpublishVolume, the claim left unpublishing (releasing) for reconcile.
// The summary's owed work (Engine.Owed: `volctl status`, its --json "owed") lists v as
// node-expand, "a NodeExpandVolume owed that a reconcile pass sends" (docs/json.md), its words
// "`volctl reconcile` ... sends it", under "(volctl reconcile does it, or says what stops it)".
// passPaysOwed counts any claim as the volume on the node, releasing or not; but the pass
// finishes the release first, and expandOnNode sends nothing for a releasing claim, nor for a
// volume no longer staged: the reconcile sends no NodeExpandVolume, reports nothing of v's
// expansion, the debt stays, and the next summary lists nothing of it: the user was told
// reconcile would grow the file system, and it silently did not. Correct: what Owed lists as
// node-expand is what the pass sends or says a problem of (passPaysOwed judging the claims the
// pass keeps, not those it releases first); a debt left to the next publish is not listed as a
// pass's work.
// Found by helper review76 (whole).
func TestOwedNodeExpansionOfAVolumeWhoseClaimIsReleasingIsWhatReconcileDoes(t *testing.T) {
	t.Parallel()
	h := nodeOnlyStepFailedOnAClaimedVolume(t)
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.Internal, Times: 100})
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
		t.Fatal("setup: release with NodeUnpublishVolume failing succeeded")
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4<<20 || len(v.Claims) != 1 || !v.Claims[0].Releasing {
		t.Fatalf("setup: owed %d, claims %+v; want 4MiB owed and a's claim left releasing", v.NodeExpansionOwed, v.Claims)
	}
	owed, err := h.e.Owed(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed *OwedWork
	for i := range owed {
		if owed[i].VolumeID == "v" && owed[i].Kind == OwedNodeExpand {
			listed = &owed[i]
		}
	}
	if listed == nil {
		return // not listed as a pass's work: nothing promised
	}

	before := h.mem.CallCount(csi.RPCNodeExpandVolume)
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent := h.mem.CallCount(csi.RPCNodeExpandVolume) - before
	said := false
	for _, p := range rep.Problems {
		said = said || (p.VolumeID == "v" && strings.Contains(p.Message, "xpan"))
	}
	if sent == 0 && !said {
		t.Errorf("Owed listed %q for volume v (%s), but the reconcile pass sent no NodeExpandVolume and reported nothing of it (actions %+v, problems %+v); "+
			"the debt stays (%d bytes owed) and the summary now lists nothing of it",
			listed.Kind, listed.What, rep.Actions, rep.Problems, h.volumeInfo("v").NodeExpansionOwed)
	}
}
