package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store/storetest"
)

// otherStateDir opens an engine on a state dir of its own, another volctl installation's, with
// the harness's plugin registered there under the same ID and socket.
func (h *harness) otherStateDir() *Engine {
	h.t.Helper()
	dir := h.t.TempDir()
	storetest.Seed(h.t, dir)
	e, err := Open(h.ctx, Config{StateDir: dir, Retry: fastRetry, Mounts: h.mounts,
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { e.Close() })
	if _, err := e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		h.t.Fatalf("register plugin in the other state dir: %v", err)
	}
	return e
}

// Two volctl installations (two state dirs) on one plugin, one storage volume registered in
// both (chaos16): the first claims it, and the plugin attaches it to the node. The second's
// claim sent ControllerPublishVolume, answered OK (it is idempotent: the attachment is there),
// took the attachment for its own, and when NodeStageVolume was refused (one staging path per
// volume) its rollback sent ControllerUnpublishVolume: the volume was detached from under the
// first installation's published claim. A plugin that lists the nodes a volume is published to
// tells volctl, before it attaches, that the attachment is not its own: the second claim is
// refused as a conflict, no RPC sent that could undo the other's attachment.
func TestClaimOfAVolumeAnotherStateDirAttachedLeavesItsAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := claimAttachedByAnotherStateDir(t, h, func() {})
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != "published" {
		t.Errorf("first state dir's claims = %+v, want its one claim published", live)
	}
	if cl, err := other.Volume(h.ctx, "w"); err != nil || len(cl.Claims) != 0 {
		t.Errorf("other state dir's volume w = %+v, %v, want no claim left", cl.Claims, err)
	}
	// Once the first releases, the attachment goes with it and the second claims as usual.
	h.release("v", "a")
	if _, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"}); err != nil {
		t.Errorf("claim after the first state dir released the volume: %v", err)
	}
}

// claimAttachedByAnotherStateDir has this state dir claim volume v (the plugin attaches it to
// node-1), registers the same storage volume as w in another state dir, runs plugin (what the
// plugin does besides), and claims w there for alloc b: the claim must be refused as a conflict
// naming the attachment, with neither ControllerPublishVolume nor ControllerUnpublishVolume
// sent and the volume still published to node-1. It returns the other state dir's engine.
func claimAttachedByAnotherStateDir(t *testing.T, h *harness, plugin func()) *Engine {
	t.Helper()
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	other := h.otherStateDir()
	if _, err := other.RegisterVolume(h.ctx, registered("w", ext)); err != nil {
		t.Fatalf("register the volume in the other state dir: %v", err)
	}
	plugin()
	h.mem.ResetCalls()

	_, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `is attached to node "node-1" already, and not by this volctl state dir`) {
		t.Errorf("claim from the other state dir = %v, want a conflict saying the volume is attached to node-1 already, not by this state dir", err)
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCControllerUnpublishVolume) || slices.Contains(got, csi.RPCControllerPublishVolume) {
		t.Errorf("RPCs = %v, want neither ControllerPublishVolume nor ControllerUnpublishVolume for an attachment another state dir made", got)
	}
	if nodes := h.mem.PublishedNodes(ext); !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("volume published to %v, want still node-1: the first state dir's claim is published", nodes)
	}
	return other
}
