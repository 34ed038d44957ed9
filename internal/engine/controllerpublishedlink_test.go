package engine

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// A claim left controller-published (NodeStageVolume UNAVAILABLE), with a link put at its
// target, is driven on by reconcile: NodePublishVolume is sent only after node-staged is
// committed, so the link is a hand's and nothing is sent through it. Migration 0014 as first
// written set target_sent = 1 for such a claim recorded at version 13 (fixed in 0014 itself:
// TestClaimTargetSentMigratesOnTheSafeSide); a database a build of it migrated reads the claim
// TargetNotAccepted (target_accepted 0, target_sent 1), simulated in "migrated": a drive from
// controller-published takes no NodePublishVolume for sent whatever the record says
// (publishSent).
func TestControllerPublishedClaimNeverFollowsAHandsLink(t *testing.T) {
	t.Parallel()
	for _, migrated := range []bool{false, true} {
		t.Run(map[bool]string{false: "native", true: "migrated"}[migrated], func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Unavailable)
			h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			live := h.liveClaims("v")
			if len(live) != 1 || live[0].State != store.ClaimControllerPublished || live[0].Releasing {
				t.Fatalf("claims %+v; want one controller-published, going forward", live)
			}
			if migrated {
				if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
					c, err := tx.Claims().Get(live[0].ID)
					if err != nil {
						return err
					}
					c.Target = store.TargetNotAccepted
					return tx.Claims().Update(&c)
				}); err != nil {
					t.Fatal(err)
				}
			}
			h.faults.Clear()
			target := live[0].TargetPath
			if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(t.TempDir(), target); err != nil {
				t.Fatal(err)
			}
			h.faults.ResetCounts()
			h.e.Reconcile(h.ctx)
			if n := h.faults.Calls(csi.RPCNodeUnpublishVolume); n != 0 {
				t.Errorf("NodeUnpublishVolume sent %d times through a link put at the target of a claim that never got past NodeStageVolume; want none", n)
			}
		})
	}
}
