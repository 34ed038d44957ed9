package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// restartWith restarts the harness's plugin with its config edited, keeping what it holds
// (volumes, attachments, stagings, publications), and forgets the calls it got.
func (h *harness) restartWith(edit func(*csitest.MemConfig)) {
	h.t.Helper()
	h.stopServe()
	h.mem.Reconfigure(edit)
	h.serveAgain(h.t)
	h.mem.ResetCalls()
}

// A node plugin that gains STAGE_UNSTAGE_VOLUME while a volume is published without a staging:
// the release undoes what was done (NodeUnpublishVolume), and sends no NodeUnstageVolume for a
// staging never made. A second claim made after the change stages the volume; the last release
// unstages it once.
func TestGainedStageUnstageUndoesOnlyWhatWasDone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = true })

	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	h.release("v", "a")
	if n := h.mem.CallCount(csi.RPCNodeUnstageVolume); n != 0 {
		t.Errorf("NodeUnstageVolume sent %d times while claim b uses the staging", n)
	}
	h.release("v", "b")
	if n := h.mem.CallCount(csi.RPCNodeUnstageVolume); n != 1 {
		t.Errorf("NodeUnstageVolume sent %d times for the staging claim b made, want 1", n)
	}
	if n := h.mem.CallCount(csi.RPCNodeUnpublishVolume); n != 2 {
		t.Errorf("NodeUnpublishVolume sent %d times for two claims, want 2", n)
	}
	if _, ok := h.staging("v"); ok {
		t.Error("a staging record outlived the releases")
	}
}

// A controller that gains PUBLISH_UNPUBLISH_VOLUME while a claim holds a volume it never
// attached: the release sends no ControllerUnpublishVolume for an attachment never made, and
// frees the claim.
func TestGainedPublishUnpublishDetachesNothingNeverAttached(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = true })

	h.release("v", "a")
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("ControllerUnpublishVolume sent %d times for a volume never attached", n)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the release: %+v", live)
	}
}

// A plugin restarted with another NodeGetInfo node_id while a claim holds an attachment to the
// old one: the release detaches the node the record names, not the one the plugin reports now.
func TestReleaseAfterNodeIDChangeDetachesTheRecordedNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID = "node-2" })

	h.release("v", "a")
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %v after the release", nodes)
	}
	reqs := csitest.Requests[csi.ControllerUnpublishVolumeRequest](h.mem)
	if !slices.ContainsFunc(reqs, func(r csi.ControllerUnpublishVolumeRequest) bool { return r.NodeID == "node-1" }) {
		t.Errorf("ControllerUnpublishVolume requests %+v, want one for node-1", reqs)
	}
}
