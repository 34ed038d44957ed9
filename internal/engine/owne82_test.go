package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNewClaimStageTakeBackRefusedDoesNotSayTheRolledBackClaimStaysHeld: since 0cc82ecf a new
// claim's NodeStageVolume answered OK with nothing mounted over a staging a reboot left is
// taken back too (unstageToStageOnce with left nil). When the NodeUnstageVolume or the
// NodeUnpublishVolume sent for that is refused, the new claim is rolled back, yet its error
// says "the claim stays held for `volctl reconcile`, which tries again; `volctl volume release
// v --alloc b` frees it (the claim was rolled back)": it contradicts itself, nothing is held,
// reconcile retries nothing of b, and the release advised frees nothing. The NodeUnpublishVolume
// refusal also blames "an earlier NodeStageVolume whose answer was not recorded (a kill, a
// lost answer)", which never happened: the plugin answered OK with nothing mounted. Correct:
// for a new (not degraded) claim, say what happened (the plugin answered NodeStageVolume OK
// with nothing mounted and refused the take-back), that the claim was rolled back, and advise
// claiming again, with no promise of a hold or reconcile retry.
// Found by helper review82 (owne).
func TestNewClaimStageTakeBackRefusedDoesNotSayTheRolledBackClaimStaysHeld(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeUnstageVolume, csi.RPCNodeUnpublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel()
			h := kernelHarness(t, nil)
			rebootWithPluginThatRemembers(t, h, spec.MultiNodeMultiWriter)
			t.Cleanup(func() {
				h.faults.Clear()
				_, _ = h.e.Release(h.ctx, "v", "b")
				_, _ = h.e.Release(h.ctx, "v", "a")
			})
			h.faults.Inject(rpc, csitest.Fault{Code: codes.Internal, Message: "plugin busy", Times: 100})
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
			h.faults.Clear()
			if err == nil || !strings.Contains(err.Error(), "plugin busy") {
				t.Fatalf("claim b with %s refused: %v; want an error carrying the refusal", rpc, err)
			}
			cls, cerr := h.e.Claims(h.ctx)
			if cerr != nil {
				t.Fatal(cerr)
			}
			for _, c := range cls {
				if c.Alloc == "b" {
					t.Fatalf("precondition: claim b is recorded (%s), want it rolled back", c.State)
				}
			}
			msg := err.Error()
			if strings.Contains(msg, "stays held") || strings.Contains(msg, "volctl reconcile`, which tries again") {
				t.Errorf("claim b's error says the claim stays held for reconcile, but it was rolled back (nothing is held, the release it advises frees nothing): %s", msg)
			}
			if strings.Contains(msg, "whose answer was not recorded") {
				t.Errorf("claim b's error blames an earlier NodeStageVolume whose answer was not recorded; the plugin answered OK with nothing mounted: %s", msg)
			}
		})
	}
}
