package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyRefusalOfAPendingExpansionKeepsThePendingMark: volume v's ControllerExpandVolume
// to 4MiB is done by the plugin but its answer is lost, so v is recorded at 1MiB with the
// expansion to 4MiB pending (the record's only word that the storage may have grown). The
// plugin then restarts with node EXPAND_VOLUME alone (capacity now capped at 8MiB), and the user
// expands v to 16MiB: the node-only NodeExpandVolume is refused for good (OUT_OF_RANGE) at every
// target, and nodeOnlyRefused "puts the record back as it was before this expand" — but not
// the pending mark, which the record commit before the node step had cleared. volctl says
// "nothing grew; volume v stays recorded at 1MiB" while the storage is 4MiB, and the pending
// expansion is forgotten: with the controller capability back, reconcile has nothing to
// replay and v stays recorded at 1MiB for good.
//
// Correct behaviour: a node-only expansion refused for good leaves the record as it was,
// the pending expansion (expand_min/max and any kept beneath it) included, so that reconcile
// (or the expand again) still learns the size the storage has.
// Found by helper review82 (capchange).
func TestNodeOnlyRefusalOfAPendingExpansionKeepsThePendingMark(t *testing.T) {
	t.Parallel()
	// A plugin that cannot list: a lost answer is not learnt from its listing, so it stays pending.
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = false })
	ext := h.create(volume("v")).ExternalID // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatalf("premise: an expand whose answers were all lost succeeded")
	}
	h.faults.Clear(csi.RPCControllerExpandVolume)
	if pv, _ := h.mem.Volume(ext); pv.CapacityBytes != 4*mib {
		t.Fatalf("premise: the lost ControllerExpandVolume left the storage at %s, want 4MiB", spec.FormatSize(pv.CapacityBytes))
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("premise: after the lost answer, pending %s; want 4MiB pending", spec.FormatSize(v.ExpansionPending))
	}

	h.restartWith(func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		c.MaxVolumeSize = 8 * mib
	})
	_, err := h.e.ExpandVolume(h.ctx, "v", 16*mib, 0)
	if err == nil {
		t.Fatalf("premise: the node-only expand to 16MiB, above the plugin's 8MiB maximum, succeeded")
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent (error: %v)", err)
	}
	pv, _ := h.mem.Volume(ext)
	v := h.volumeInfo("v")
	if v.ExpansionPending == 0 && v.CapacityBytes < pv.CapacityBytes {
		t.Errorf("after the node-only expansion was refused for good: volume v recorded at %s, nothing pending, while the storage is %s: "+
			"the pending expansion to 4MiB (its answer lost) was forgotten; error: %v",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(pv.CapacityBytes), err)
	}

	// The plugin back with the controller's EXPAND_VOLUME: reconcile replays what is pending.
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = true })
	if rep, rerr := h.e.Reconcile(h.ctx); rerr != nil {
		t.Logf("reconcile: %v (%+v)", rerr, rep.Problems)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != pv.CapacityBytes {
		t.Errorf("with the controller's EXPAND_VOLUME back and a reconcile: volume v recorded at %s, the storage %s: the size the lost answer grew it to is never learnt",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(pv.CapacityBytes))
	}
}
