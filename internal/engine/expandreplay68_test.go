package engine

import (
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// An expansion to 4MiB with --limit 16MiB is pending (every answer lost: the storage
// is 4MiB, the record 1MiB). The user then lowers the volume's capacity_max with `volume
// expand v --size 1MiB --limit 8MiB` (the size it is recorded at: TestExpandToTheCurrentSizeSetsTheNewLimit),
// which limitBelowPending takes (8MiB is not below the pending 4MiB). Reconcile then sends the
// pending expansion again with the limit recorded with it, 16MiB, not the 8MiB set since, and its
// success records 16MiB as the volume's capacity_max, undoing the user's later word: the bug
// pendingLimit fixed for a registration again (TestRegisterLoweringCapacityMaxUnderAPendingExpansion)
// was still there for the expand's own --limit. A plugin that allocates in large units (here
// answering 12MiB) grew the volume past the 8MiB capacity_max with nothing said. Found by helper
// review68.
func TestExpandLimitSetBesideAPendingExpansionBoundsItsReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Node.ExpandVolume, c.Controller.ListVolumes, c.Controller.GetVolume = false, false, false
	})
	h.create(volume("v")) // 1MiB
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 16*mib); err == nil {
		t.Fatal("expand whose every answer was lost succeeded")
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("expansion pending = %s, want 4MiB", spec.FormatSize(v.ExpansionPending))
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 1*mib, 8*mib); err != nil {
		t.Fatalf("expand --size 1MiB --limit 8MiB (capacity_max lowered, above the pending 4MiB): %v", err)
	}
	if v := h.volumeInfo("v"); v.RequestedMax != 8*mib {
		t.Fatalf("capacity_max after --limit 8MiB = %s", spec.FormatSize(v.RequestedMax))
	}
	h.mem.ResetCalls()
	h.mem.AnswerExpandWith(12 * mib) // a plugin allocating in 12MiB units, within any limit it is sent
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v", err)
	for _, d := range rep.Actions {
		t.Logf("reconcile did: %+v", d)
	}
	for _, p := range rep.Problems {
		t.Logf("reconcile problem: %s", p.Message)
	}
	for _, r := range csitest.Requests[csi.ControllerExpandVolumeRequest](h.mem) {
		if r.CapacityMax == 0 || r.CapacityMax > 8*mib {
			t.Errorf("reconcile sent the pending expansion with limit_bytes %s; want the capacity_max 8MiB set since", spec.FormatSize(r.CapacityMax))
		}
	}
	v := h.volumeInfo("v")
	if v.RequestedMax != 8*mib {
		t.Errorf("after reconcile: capacity_max %s, recorded at %s; want the 8MiB the user set after the pending expansion (its later word)",
			spec.FormatSize(v.RequestedMax), spec.FormatSize(v.CapacityBytes))
	}
}

// A volume published for two allocs; the node's NodeExpandVolume fails for one
// claim's target (its path, for good: FAILED_PRECONDITION) and would succeed for the other's.
// The docs: after the controller's step "it is sent for each published claim at its target ...
// and the debt is cleared when all succeeded". expandOnNode stopped at the first failure: the
// other claim's target was never sent its NodeExpandVolume, by this expand, by the same expand
// run again as advised, or by reconcile, for as long as the first one failed; that alloc kept
// the old file-system size though nothing stood in its way. Found by helper review68.
func TestNodeExpandFailingForOneClaimStillSendsItToTheOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-1"})
	claims := h.liveClaims("v")
	if len(claims) != 2 {
		t.Fatalf("claims: %+v", claims)
	}
	broken, healthy := claims[0].TargetPath, claims[1].TargetPath // the one expandOnNode meets first fails
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.FailedPrecondition, Message: "this target's mount is wedged",
		When: func(m proto.Message) bool { return m.(*csipb.NodeExpandVolumeRequest).GetVolumePath() == broken }})
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	t.Logf("expand: %v", err)
	if err == nil {
		t.Fatal("expand with one target's NodeExpandVolume failing succeeded")
	}
	_, again := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0) // as advised
	t.Logf("the same expand again: %v", again)
	if _, rerr := h.e.Reconcile(h.ctx); rerr != nil {
		t.Logf("reconcile: %v", rerr)
	}
	var sent []string
	for _, r := range csitest.Requests[csi.NodeExpandVolumeRequest](h.mem) {
		sent = append(sent, r.VolumePath)
	}
	if !slices.Contains(sent, healthy) {
		t.Errorf("%d NodeExpandVolume calls, all at the failing target %q (refused there each time); none reached the plugin at the other published claim's target %q (answered OK there: %q)",
			h.faults.Calls(csi.RPCNodeExpandVolume), broken, healthy, sent)
	}
	// The debt stays while one target fails, and the error names that one.
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Errorf("node expansion owed %s while web-0's target fails; want 4MiB still owed", spec.FormatSize(v.NodeExpansionOwed))
	}
	if err == nil || !strings.Contains(err.Error(), `alloc "web-0"`) || strings.Contains(err.Error(), `alloc "web-1"`) {
		t.Errorf("expand's error %v; want it to name web-0's target alone", err)
	}
	// Once that target takes it, the next expand clears the debt.
	h.faults.Clear(csi.RPCNodeExpandVolume)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand once every target takes it: %v", err)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 {
		t.Errorf("node expansion owed %s after every target took it", spec.FormatSize(v.NodeExpansionOwed))
	}
}
