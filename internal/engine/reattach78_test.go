package engine

import (
	"maps"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestJoinKilledAfterItsReattachedPublishKeepsTheNewPublishContext: claim b joins volume v's
// staging while the plugin has lost the attachment volctl records; its NodePublishVolume is
// refused FAILED_PRECONDITION, so reattach sends ControllerPublishVolume again, and the plugin
// attaches the volume anew with another publish_context (another device path, as a re-attach
// gives). reattach keeps it in memory only (p.staging, committed by the next flush), publishes
// with it, and volctl is killed once the publish answered (rpc:NodePublishVolume), before it is
// recorded. The next pass finds b's target holding the volume (publishedBefore) and records b
// published, and the staging row keeps the old publish_context for good: the plugin holds the
// attachment now, so no node call is refused FAILED_PRECONDITION again and reattach never runs.
// After the next reboot the restore sends NodeStageVolume with the stale publish_context: a
// plugin that stages what it names stages the old device (another volume's, perhaps), and one
// that checks it refuses every pass, the claims held for good. Correct: the publish_context a
// ControllerPublishVolume returned is committed before any node RPC is sent with it (as
// controllerPublish's own is, by the flush before NodeStageVolume), so what volctl records is
// the attachment's, and the restore after a reboot completes.
// Found by helper review78 (stack).
func TestJoinKilledAfterItsReattachedPublishKeepsTheNewPublishContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume, c.PublishChecksAttachment = true, true })
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	unpublishBehindVolctl(t, h, "v")
	moved := map[string]string{"device": "/dev/mem/reattached-elsewhere"}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.PublishContext = moved })

	var b ClaimInfo
	if at := cutShortWhen(h, func(name string) bool { return name == "rpc:NodePublishVolume" }, func() {
		b, _ = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	}); at == "" {
		t.Fatalf("precondition: claim b never reached rpc:NodePublishVolume after attaching again")
	}
	if n := h.mem.CallCount(csi.RPCControllerPublishVolume); n != 2 {
		t.Fatalf("precondition: ControllerPublishVolume sent %d times; want claim a's and claim b's reattach", n)
	}
	h.open(h.e.cfg) // the next process
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("the pass after the kill: %v, problems %+v; want claim b finished", err, rep.Problems)
	}
	if got, _ := h.staging("v"); !maps.Equal(got.PublishContext, moved) {
		t.Errorf("staging row's publish_context = %v once claim b is published; want the attachment's %v, which the reattach's ControllerPublishVolume returned", got.PublishContext, moved)
	}

	// A reboot: every mount gone; the plugin still holds its attachment.
	bi, _ := h.e.ClaimInfo(h.ctx, "v", "b")
	if b.TargetPath == "" {
		b = bi
	}
	st, _ := h.staging("v")
	for _, p := range []string{a.TargetPath, b.TargetPath, st.StagingPath} {
		h.mounts.markGone(p)
	}
	h.open(h.e.cfg)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("the restore after a reboot: %v, problems %+v; want both claims restored (NodeStageVolume sent with the attachment's publish_context)", err, rep.Problems)
	}
}
