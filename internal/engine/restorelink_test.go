package engine

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
	"google.golang.org/grpc/codes"
)

// A restore's NodePublishVolume makes the target the plugin's (claims31: "A
// restore's acceptance is void ... this publish may leave the plugin's link there"), and the
// troubleshooting guide says not to rm such a link (the plugin's mount may be behind it). The
// next reconcile of the degraded claim finds the plugin's link at the target: it sends the
// plugin NodeUnpublishVolume (its chance to remove the link and what it leads to) before the
// restore publishes again, and never tells the user to rm the link (which leaked the plugin's
// mount behind it, and had the plugin publish again beside it).
func TestRestoresOwnLinkIsUnpublishedNotToldToBeRemovedByHand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	p, target := h.restoreLostByALinkingPlugin(t, codes.OK)
	live := h.liveClaims("v")
	if len(live) != 1 || !live[0].Degraded || live[0].Target != store.TargetNotAccepted {
		t.Fatalf("claims after the restore's NodePublishVolume failed = %+v; want a's held, degraded, its publish recorded sent", live)
	}
	if fi, err := os.Lstat(target); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the target after the restore: %v, %v; want the plugin's link", fi, err)
	}
	h.faults.Clear()
	p.ResetCalls()
	rep, _ := h.e.Reconcile(h.ctx)
	var said string
	for _, pr := range rep.Problems {
		said += pr.Message + "\n"
	}
	for _, c := range h.liveClaims("v") {
		said += c.LastError + "\n"
	}
	if strings.Contains(said, "rm "+target) {
		t.Errorf("reconcile of the degraded claim, whose restore's NodePublishVolume the plugin answered after linking the target, says to rm the plugin's link:\n%s", said)
	}
	rpcs := volumeRPCs(p)
	t.Logf("plugin was sent %v", rpcs)
	un, pub := slices.Index(rpcs, csi.RPCNodeUnpublishVolume), slices.Index(rpcs, csi.RPCNodePublishVolume)
	if un < 0 || (pub >= 0 && pub < un) {
		t.Errorf("the plugin was sent %v; want NodeUnpublishVolume of the target holding its link before any NodePublishVolume again", rpcs)
	}
}
