package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyExpansionRefusedForGoodAtTheNextPublishIsNotRecordedAtTheSizeRefused: a plugin
// that expands on the node alone (2MiB at most) is asked `volume expand v --size 4MiB` while v
// is on no path here: the NodeExpandVolume that is the whole expansion is owed, v recorded at
// 4MiB. The next claim's publish sends it, and the plugin refuses it for good (OUT_OF_RANGE,
// nothing grown). The put-back made for exactly this refusal (nodeOnlyRefused) runs only when
// the refusal meets the expand itself: here v stays recorded at 4MiB of storage that is 1MiB,
// the advised `volctl volume expand v --size 4MiB` again is refused the same way for good
// (still saying "it stays owed: run ... again"), and the expand to a size the plugin takes,
// 2MiB, is refused "volumes cannot shrink: v is 4MiB": no way out named that works.
//
// Correct behaviour: a node-only debt refused for good wherever it is sent (the publish, the
// expand to the size recorded, reconcile) leaves the volume recorded at the size the storage
// has, nothing owed for the size refused, so an expand to a size the plugin takes is sent and
// grows it.
// Found by helper review82 (ownc); fixed in the next round (migration 0034).
func TestNodeOnlyExpansionRefusedForGoodAtTheNextPublishIsNotRecordedAtTheSizeRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		c.MaxVolumeSize = 2 * mib
	})
	ext := h.create(volume("v")).ExternalID // 1 MiB, on no path here
	info, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err != nil || info.NodeExpansionOwed != 4*mib {
		t.Fatalf("premise: the node-only expand of a volume on no path is recorded owed at 4MiB: owed %s, %v", spec.FormatSize(info.NodeExpansionOwed), err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"}) // sends the owed NodeExpandVolume: refused
	if h.faults.Calls(csi.RPCNodeExpandVolume) == 0 {
		t.Fatalf("premise: the publish did not send the owed NodeExpandVolume")
	}
	pv, _ := h.mem.Volume(ext)
	if pv.CapacityBytes != mib {
		t.Fatalf("premise: the storage grew (%s) though the plugin holds 2MiB at most", spec.FormatSize(pv.CapacityBytes))
	}

	// Put back at the publish that met the refusal: the size before the expand, nothing owed.
	if v := h.volumeInfo("v"); v.CapacityBytes != mib || v.NodeExpansionOwed != 0 {
		t.Errorf("after the publish's NodeExpandVolume was refused for good: volume v recorded at %s, owed %s; want 1MiB, nothing owed",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed))
	}
	// As advised: the same expand again.
	_, again := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	v := h.volumeInfo("v")
	if v.CapacityBytes != pv.CapacityBytes {
		t.Errorf("after the plugin refused the node-only expansion to 4MiB for good (at the publish, then at the expand again): volume v is recorded at %s "+
			"(owed %s) while the storage is %s; the expand again said: %v",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed), spec.FormatSize(pv.CapacityBytes), again)
	}
	// The way out: a size the plugin takes.
	_, err = h.e.ExpandVolume(h.ctx, "v", 2*mib, 0)
	pv, _ = h.mem.Volume(ext)
	if err != nil || pv.CapacityBytes < 2*mib {
		t.Errorf("then `volume expand v --size 2MiB`, a size the plugin takes: %v; the storage is %s: want it sent and grown to 2MiB",
			err, spec.FormatSize(pv.CapacityBytes))
	}
}
