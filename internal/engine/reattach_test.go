package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A volume recorded attached that the plugin does not hold attached any more (its attachment
// recorded before a ControllerPublishVolume that never reached it and kept through an instance
// that attached nothing, or the plugin's records lost), found after a reboot: the restore's
// NodeStageVolume is refused FAILED_PRECONDITION, "not controller-published to this node". The
// restore sends ControllerPublishVolume again, once (it is idempotent for the same volume, node
// and capability), and stages with the publish_context it returns, rather than leaving the
// claim degraded for every reconcile until a release and a new claim (chaos12's run).
func TestRestoreAttachesAgainWhenThePluginSaysTheVolumeIsNotPublished(t *testing.T) {
	t.Parallel()
	for _, stages := range []bool{true, false} {
		t.Run(map[bool]string{true: "NodeStageVolume refused", false: "NodePublishVolume refused (no staging)"}[stages], func(t *testing.T) {
			restoreAttachesAgain(t, stages)
		})
	}
}

func restoreAttachesAgain(t *testing.T, stages bool) {
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = stages })
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mounts.markGone(cl.TargetPath) // a reboot
	if st, _ := h.staging("v"); st.StagingPath != "" {
		h.mounts.markGone(st.StagingPath)
	}
	unpublishBehindVolctl(t, h, "v")
	h.open(Config{}) // a new process after the reboot
	h.mem.ResetCalls()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile: %v, problems %v; want the claim restored", err, rep.Problems)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() || live[0].Degraded {
		t.Fatalf("claims = %+v, want the one claim published again", live)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("plugin's attachments = %v, want node-1's made again", nodes)
	}
	if n := h.mem.CallCount(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume sent %d times, want once", n)
	}
	st, _ := h.staging("v")
	if len(st.PublishContext) == 0 || !strings.Contains(st.PublishContext["device"], h.externalID("v")) {
		t.Errorf("attachment's publish_context = %v, want what ControllerPublishVolume returned", st.PublishContext)
	}
}

// The same for a claim that joins a staging other claims made (chaos13): the plugin lost the
// attachment volctl records (its attach capability came and went), NodeStageVolume is not sent
// (the volume is staged), and NodePublishVolume is refused FAILED_PRECONDITION, as a staging
// plugin answers for a volume not published to the node. The claim attaches again, once, and
// publishes, rather than being refused until every claim of the volume is released.
func TestClaimJoiningAStagingAttachesAgainWhenThePluginLostTheAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume, c.PublishChecksAttachment = true, true })
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	unpublishBehindVolctl(t, h, "v")
	h.mem.ResetCalls()
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}); err != nil {
		t.Fatalf("claim b: %v; want it published after attaching again", err)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("plugin's attachments = %v, want node-1's made again", nodes)
	}
	if n := h.mem.CallCount(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume sent %d times, want once", n)
	}
	if n := h.mem.CallCount(csi.RPCNodeStageVolume); n != 0 {
		t.Errorf("NodeStageVolume sent %d times, want none (the volume is staged)", n)
	}
	if live := h.liveClaims("v"); len(live) != 2 || !live[0].AtRest() || !live[1].AtRest() {
		t.Errorf("claims = %+v, want both published", live)
	}
}

// unpublishBehindVolctl sends the plugin ControllerUnpublishVolume of vol from node-1 itself:
// the plugin no longer holds the attachment volctl records.
func unpublishBehindVolctl(t *testing.T, h *harness, vol string) {
	t.Helper()
	c, err := csi.New(csi.Config{ControllerSocket: h.socket, NodeSocket: h.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.ControllerUnpublishVolume(h.ctx, csi.ControllerUnpublishVolumeRequest{VolumeID: h.externalID(vol), NodeID: "node-1"}); err != nil {
		t.Fatal(err)
	}
}
