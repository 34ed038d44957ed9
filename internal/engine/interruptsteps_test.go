package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A claim or release interrupted (Ctrl-C, SIGTERM: the command's context ended) as each of its
// RPCs is sent: the error says it was interrupted, what state the claim is left in and what to
// run, and reconcile then finishes the claim (publishing it) or the release (freeing it), the
// plugin left as the store says.
func TestInterruptAtEachStepLeavesItResumable(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		t.Run("claim/"+rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			ctx, cancel := context.WithCancel(h.ctx)
			ctx = WithProgress(ctx, func(step string) {
				if step == rpc {
					cancel()
				}
			})
			_, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			cancel()
			if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "volctl reconcile") {
				t.Fatalf("claim interrupted at %s: %v; want it to say it was interrupted and what to run", rpc, err)
			}
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatal(err)
			}
			cls := h.liveClaims("v")
			if len(cls) != 1 || cls[0].State != "published" || cls[0].NeedsReconcile {
				t.Fatalf("claims after reconcile: %+v; want one published", cls)
			}
			h.release("v", "a")
			if got := h.mem.Targets(h.externalID("v")); len(got) != 0 {
				t.Errorf("plugin's targets after release: %v", got)
			}
		})
	}
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		for _, resume := range []string{"reconcile", "release"} {
			t.Run("release/"+rpc+"/"+resume, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("v", capab(spec.SingleNodeWriter)))
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				ctx, cancel := context.WithCancel(h.ctx)
				ctx = WithProgress(ctx, func(step string) {
					if step == rpc {
						cancel()
					}
				})
				_, err := h.e.Release(ctx, "v", "a")
				cancel()
				cls := h.liveClaims("v")
				if len(cls) != 1 {
					t.Fatalf("claims after the release interrupted at %s: %+v; want it left, releasing", rpc, cls)
				}
				want := fmt.Sprintf("interrupted: the claim is left %s, releasing; `volctl reconcile` will finish releasing it, as will `volctl volume release v --alloc a` run again", cls[0].State)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("release interrupted at %s: %v\nwant it to say %q", rpc, err, want)
				}
				if strings.Contains(err.Error(), "--force") {
					t.Fatalf("release interrupted at %s offers to drop the claim by force, the plugin not gone: %v", rpc, err)
				}
				if resume == "reconcile" {
					if _, err := h.e.Reconcile(h.ctx); err != nil {
						t.Fatal(err)
					}
				} else {
					h.release("v", "a")
				}
				if cls := h.liveClaims("v"); len(cls) != 0 {
					t.Fatalf("claims after %s: %+v; want none", resume, cls)
				}
				if got := h.mem.Targets(h.externalID("v")); len(got) != 0 {
					t.Errorf("plugin's targets after %s: %v", resume, got)
				}
				if got := h.mem.PublishedNodes(h.externalID("v")); len(got) != 0 {
					t.Errorf("plugin's attachments after %s: %v", resume, got)
				}
			})
		}
	}
}
