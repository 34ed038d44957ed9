package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// owedListsVolume reports whether Owed lists work of volume id, with what it listed.
func owedListsVolume(t *testing.T, h *harness, id string) (bool, []OwedWork) {
	t.Helper()
	owed, err := h.e.Owed(h.ctx)
	if err != nil {
		t.Fatalf("owed: %v", err)
	}
	for _, w := range owed {
		if w.VolumeID == id {
			return true, owed
		}
	}
	return false, owed
}

// TestOwedListsAControllerAloneDebtOnThePublishedVolumeThatReconcilePays: volume v, published
// for alloc a, owes a node-only expansion to 4MiB (its NodeExpandVolume failed); the plugin is
// back declaring the controller's EXPAND_VOLUME (ONLINE) and not the node's, so the debt is the
// ControllerExpandVolume alone (controllerAloneOwes), which a reconcile pass sends and which
// clears it (reconcileExpansions → expandOnNode → payControllerAlone). The summary's owed work
// (Engine.Owed, `volctl status`) now lists an owed node step "that a pass sends", but
// owedExpansionWaits answers byPass=false for every controllerAloneOwes case, so the summary
// lists nothing for v, "0 not at rest", and the next reconcile grows the storage of a volume it
// said nothing of: the defect the node-expand kind was added to end. Correct: byPass true where
// the pass sends the step (the volume on the node through an ONLINE plugin, or off it through
// one that expands only offline), so Owed lists v.
// Found by helper review76 (own1).
func TestOwedListsAControllerAloneDebtOnThePublishedVolumeThatReconcilePays(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h := nodeOnlyStepFailedOnAClaimedVolume(t)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false })
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil { // records the plugin as it is now
		t.Fatal(err)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib || !strings.Contains(v.NodeExpansionWaits, "ControllerExpandVolume") {
		t.Fatalf("setup: owed %d, waits %q; want 4MiB owed, paid by the controller's step alone", v.NodeExpansionOwed, v.NodeExpansionWaits)
	}

	listed, owed := owedListsVolume(t, h, "v")

	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n == 0 || h.volumeInfo("v").NodeExpansionOwed != 0 {
		t.Fatalf("precondition: reconcile sent ControllerExpandVolume %d times, owed %d after (problems %+v); want the pass to pay the debt",
			n, h.volumeInfo("v").NodeExpansionOwed, rep.Problems)
	}
	if !listed {
		t.Errorf("Owed before the reconcile = %+v: nothing of volume v, whose 4MiB expansion the pass then paid by ControllerExpandVolume (%+v); "+
			"want v's owed expansion listed, as the summary lists an owed step a pass sends", owed, rep.Actions)
	}
}

// TestOwedListsAControllerAloneDebtOffTheNodeThatReconcilePays: the same debt of a volume on no
// path here (a node-only expansion recorded while unclaimed), through a plugin now
// controller-only that expands only offline: reconcile's step off the node (expandOffNode,
// offNodeStepMayBeOwed) sends the ControllerExpandVolume, which pays it, yet Owed lists nothing
// (owedExpansionWaits' controllerAloneOwes case answers byPass=false). Correct: listed.
// Found by helper review76 (own1).
func TestOwedListsAControllerAloneDebtOffTheNodeThatReconcilePays(t *testing.T) {
	t.Parallel()
	h, ext := owedNodeOnlyToFourMiB(t)
	h.restartWith(func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false
		c.Plugin.VolumeExpansionOnline, c.Plugin.VolumeExpansionOffline = false, true
	})
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}

	listed, owed := owedListsVolume(t, h, "v")

	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	mv, _ := h.mem.Volume(ext)
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n == 0 || mv.CapacityBytes < 4<<20 || h.volumeInfo("v").NodeExpansionOwed != 0 {
		t.Fatalf("precondition: reconcile sent ControllerExpandVolume %d times, storage %d, owed %d after (problems %+v); want the pass to pay the debt",
			n, mv.CapacityBytes, h.volumeInfo("v").NodeExpansionOwed, rep.Problems)
	}
	if !listed {
		t.Errorf("Owed before the reconcile = %+v: nothing of volume v, whose expansion the pass then paid off the node (%+v); want it listed", owed, rep.Actions)
	}
}

// TestVolumeStatusDoesNotCallATargetCoveredWhenItsMountCannotBeRead: volume v's claim by alloc
// a is published, nothing mounted over its target; the read of what the target shows
// (MountRoots: the mount table) fails. volumeStored sets ClaimInfo.Covered to any error
// coveredNow returns, so the claim reads "published (target covered)" and its last error is
// the read's failure: `volume status v` (and --json's "covered", documented as "the claim's
// target no longer shows what its publish mounted there") says a cover that is not there, and
// advises nothing for what is wrong (the table). Correct: Covered only for a covered target
// (coveredTarget); a read that failed said as such (not "target covered").
// Found by helper review76 (own1).
func TestVolumeStatusDoesNotCallATargetCoveredWhenItsMountCannotBeRead(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	m := &rootsUnreadable{}
	h.open(Config{Mounts: m})
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	t.Cleanup(func() { m.fail.Store(false); _, _ = h.e.Release(h.ctx, "v", "a") })
	if c := h.volumeInfo("v").Claims; len(c) != 1 || c[0].Covered != "" {
		t.Fatalf("setup: claims %+v; want one, its target not covered", c)
	}
	m.fail.Store(true)
	v := h.volumeInfo("v")
	if len(v.Claims) != 1 {
		t.Fatalf("claims of v: %+v", v.Claims)
	}
	c := v.Claims[0]
	if cond := c.Condition(); strings.Contains(fmt.Sprint(cond.Notes), "target covered") {
		t.Errorf("volume status of v with the mount table unreadable: claim for alloc a at %s reads %q, covered %q; "+
			"want no \"target covered\" of a target nothing covers (the read failed: say that)", cl.TargetPath, cond.String(), c.Covered)
	}
}
