package engine

import (
	"os"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// The plugin links the target to its own mount and its NodePublishVolume answer is
// lost (UNAVAILABLE): the claim records the publish sent. The link at the target is then
// replaced by one to another volume's staging path (by hand, by a program). The link is not
// followed, but the plugin's publication, which the claim records may exist, must be undone
// before the volume is unstaged and detached under it: linkedTarget keeps the claim
// node-staged, and the rollback removes the link unfollowed (targetRecorded) and sends
// NodeUnpublishVolume at the target. (Before, the claim was put back to controller-published
// and rolled back with no NodeUnpublishVolume at all.)
func TestLinkToOthersAfterASentPublishIsRemovedAndTheTargetUnpublished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeTarget = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Lost: true, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodePublishVolume answered UNAVAILABLE succeeded")
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimNodeStaged || live[0].Target != store.TargetNotAccepted {
		t.Fatalf("claims %+v; want one node-staged, its publish recorded sent", live)
	}
	if tg := h.mem.Targets(h.externalID("v")); len(tg) == 0 {
		t.Fatalf("the plugin holds no publication of v; want the one whose answer was lost")
	}
	target := live[0].TargetPath
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stagingPath(h.dir, "mem", "other"), target); err != nil {
		t.Fatal(err)
	}
	h.faults.Clear()
	h.mem.ResetCalls()
	h.e.Reconcile(h.ctx)
	rpcs := volumeRPCs(h.mem)
	t.Logf("plugin was sent %v", rpcs)
	if !slices.Contains(rpcs, csi.RPCNodeUnpublishVolume) {
		t.Errorf("the plugin was sent %v; want NodeUnpublishVolume (through no link): its publication of v, recorded maybe sent, is left", rpcs)
	}
	if tg := h.mem.Targets(h.externalID("v")); len(tg) != 0 {
		t.Errorf("the plugin still holds v published at %v after the claim was rolled back", tg)
	}
}
