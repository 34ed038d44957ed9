package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// pluginHolds says what the harness's plugin holds of volume v: attachments, staging, targets.
func (h *harness) pluginHolds(v string) (attached, staged, targets int) {
	id := h.externalID(v)
	_, st := h.mem.StagingPath(id)
	if st {
		staged = 1
	}
	return len(h.mem.PublishedNodes(id)), staged, len(h.mem.Targets(id))
}

// Every claim RPC in turn done by the plugin, its answer lost every time (the
// plugin killed as it answered), the plugin then restarted: the claim left where it got, then
// reconcile or a release, must converge with the plugin holding exactly what the claim needs.
func TestEveryClaimRPCDoneButUnansweredConverges(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		for _, then := range []string{"reconcile", "release"} {
			t.Run(rpc+"/"+then, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("v"))
				h.faults.Inject(rpc, csitest.Fault{Lost: true})
				if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
					t.Fatal("claim whose answers were all lost succeeded")
				}
				h.faults.Clear()
				h.stopServe()
				h.serveAgain(t)
				switch then {
				case "reconcile":
					if rep, err := h.e.Reconcile(h.ctx); err != nil {
						t.Fatalf("reconcile: %v %+v", err, rep)
					}
					live := h.liveClaims("v")
					if len(live) != 1 || live[0].State != store.ClaimPublished {
						t.Fatalf("after reconcile: %+v", live)
					}
					if a, s, tg := h.pluginHolds("v"); a != 1 || s != 1 || tg != 1 {
						t.Fatalf("after reconcile the plugin holds %d attachments, %d stagings, %d targets; want 1 each", a, s, tg)
					}
					h.release("v", "a")
				case "release":
					if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
						t.Fatalf("release: %v", err)
					}
				}
				if live := h.liveClaims("v"); len(live) != 0 {
					t.Fatalf("after the release: %+v", live)
				}
				if a, s, tg := h.pluginHolds("v"); a+s+tg != 0 {
					t.Fatalf("after the release the plugin holds %d attachments, %d stagings, %d targets; want none", a, s, tg)
				}
			})
		}
	}
}

// Every release RPC in turn done by the plugin, its answer lost every time, the plugin then
// restarted: reconcile frees the claim, the plugin holding nothing of it, and the volume can be
// claimed again.
func TestEveryReleaseRPCDoneButUnansweredConverges(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			h.faults.Inject(rpc, csitest.Fault{Lost: true})
			if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
				t.Fatal("release whose answers were all lost succeeded")
			}
			h.faults.Clear()
			h.stopServe()
			h.serveAgain(t)
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %v %+v", err, rep)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("after reconcile: %+v", live)
			}
			if a, s, tg := h.pluginHolds("v"); a+s+tg != 0 {
				t.Fatalf("after reconcile the plugin holds %d attachments, %d stagings, %d targets; want none", a, s, tg)
			}
			// And the volume can be claimed again.
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
		})
	}
}
