package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestOwedNodeOnlyExpansionPaidByTheControllerAloneSurvivesAKillBeforeItIsCleared: a volume
// owed a node-only expansion to 4MiB, its plugin restarted declaring the controller's
// EXPAND_VOLUME and not the node's, had the debt paid by payControllerAlone: the
// ControllerExpandVolume answered and was recorded as the controller's step
// (SetNodeExpansionControllerDone, failpoint expand:controller-done), and volctl was killed
// before the debt was cleared. The next volctl found the volume owing a NodeExpandVolume "its
// controller answered node_expansion_required" (which it never did), took it for a node step
// (controllerAloneOwes false once NodeExpandControllerDone is set), and every command (the
// same expand, reconcile) refused it for good, advising to start the plugin with the node's
// EXPAND_VOLUME this plugin does not need. The storage had the size; the debt stayed. The docs
// (Crash tests): a kill inside an owed expansion's controller step is one "which reconcile must
// finish without growing the storage twice", and "The plugin's declaration when the work is
// sent rules". Found by helper review73 (crash).
func TestOwedNodeOnlyExpansionPaidByTheControllerAloneSurvivesAKillBeforeItIsCleared(t *testing.T) {
	t.Parallel()
	h, ext := owedNodeOnlyToFourMiB(t)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false })
	if !cutShortAt(h, "expand:controller-done", 1, func() { _, _ = h.e.ExpandVolume(h.ctx, "v", 4*mib, 0) }) {
		t.Fatal("setup: the expand never recorded the controller's step of the owed expansion (expand:controller-done)")
	}
	h.open(h.e.cfg) // the next volctl
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes < 4*mib {
		t.Fatalf("setup: the storage is %d after the ControllerExpandVolume answered; want 4MiB", mv.CapacityBytes)
	}

	_, experr := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	rep, recerr := h.e.Reconcile(h.ctx)
	v := h.volumeInfo("v")
	if v.NodeExpansionOwed != 0 || experr != nil || recerr != nil || len(rep.Problems) != 0 {
		t.Errorf("after a kill between the controller's step of the owed expansion and the debt's clearing: owed %s (%q); "+
			"the same expand again: %v; reconcile: %v, problems %+v; want nothing owed, no error: the storage has the size "+
			"and this plugin's node has no step of its own",
			spec.FormatSize(v.NodeExpansionOwed), v.NodeExpansionWaits, experr, recerr, rep.Problems)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
		t.Errorf("NodeExpandVolume sent %d times to a node without EXPAND_VOLUME", n)
	}
}

// TestOwedNodeOnlyExpansionThroughAnOfflineControllerOnlyPluginIsPaidByReconcile: a volume
// owed a node-only expansion to 4MiB, on no path here, its plugin restarted declaring the
// controller's EXPAND_VOLUME and not the node's, and VOLUME_EXPANSION OFFLINE, not ONLINE.
// Reconcile sent the ControllerExpandVolume while the volume was off the node (expandOffNode),
// recorded it as the controller's step of a node expansion (NodeExpandControllerDone), and
// reported "its NodeExpandVolume is sent when a claim next publishes it", which a node without
// EXPAND_VOLUME is never sent: the debt then stayed for good, the claim's publish passed it in
// silence, and the same expand was refused, advising to start the plugin with the node's
// EXPAND_VOLUME, which this plugin, whose controller alone expands, does not need
// (payControllerAlone clears the debt only where NodeExpandControllerDone is unset). The docs:
// "The plugin's declaration when the work is sent rules", and a node without EXPAND_VOLUME has no
// step of its own (controllerAloneOwes). Found by helper review73 (crash).
func TestOwedNodeOnlyExpansionThroughAnOfflineControllerOnlyPluginIsPaidByReconcile(t *testing.T) {
	t.Parallel()
	h, ext := owedNodeOnlyToFourMiB(t)
	h.restartWith(func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false
		c.Plugin.VolumeExpansionOnline, c.Plugin.VolumeExpansionOffline = false, true
	})
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil { // records the plugin as it is now
		t.Fatal(err)
	}
	rep, recerr := h.e.Reconcile(h.ctx)
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes < 4*mib {
		t.Fatalf("setup: the storage is %d after reconcile (err %v, problems %+v); want the ControllerExpandVolume sent while the volume is off the node",
			mv.CapacityBytes, recerr, rep.Problems)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.release("v", "a")
	_, experr := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	v := h.volumeInfo("v")
	if v.NodeExpansionOwed != 0 || experr != nil {
		t.Errorf("after reconcile sent the ControllerExpandVolume, a claim and the same expand: owed %s (%q); the same expand: %v; "+
			"want nothing owed, no error: the storage has the size and this plugin's node has no step of its own",
			spec.FormatSize(v.NodeExpansionOwed), v.NodeExpansionWaits, experr)
	}
}
