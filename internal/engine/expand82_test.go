package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyExpansionRefusedForGoodIsNotRecordedAtTheSizeRefused: a plugin that expands on
// the node alone (node EXPAND_VOLUME, no controller EXPAND_VOLUME) is asked, through `volume
// expand v --size 4MiB`, for a size above what it supports; its NodeExpandVolume, the whole
// expansion, answers OUT_OF_RANGE (the CSI spec's "capacity range not allowed": the plugin did
// nothing). volctl had already committed the volume at 4MiB with the NodeExpandVolume owed, and
// keeps both: `volume status` shows 4MiB of storage that is still 1MiB, every reconcile and the
// advised "run `volctl volume expand v --size 4MiB` again" are refused the same way for good,
// and the one expand the plugin would take (to 2MiB) is refused as a shrink ("volumes cannot
// shrink: v is 4MiB"): a recorded capacity the plugin never reached, and advice that goes round
// in circles with no way out named.
//
// Correct behaviour, as for a ControllerExpandVolume refused (expansionAnswered: "refused: the
// plugin did nothing"): a final refusal of a node-only expansion's NodeExpandVolume leaves the
// volume recorded at the size the storage has, nothing owed for the refused size, so an expand
// to a size the plugin takes is sent and grows it.
// Found by helper review82 (expand).
func TestNodeOnlyExpansionRefusedForGoodIsNotRecordedAtTheSizeRefused(t *testing.T) {
	t.Parallel()
	h, ext := nodeOnlyCapped(t)

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil {
		t.Fatalf("premise: the node-only expand to 4MiB, above the plugin's 2MiB maximum, succeeded")
	}
	if n := len(h.nodeExpands()); n == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent (error: %v)", err)
	}
	pv, _ := h.mem.Volume(ext)
	v := h.volumeInfo("v")
	if v.CapacityBytes != pv.CapacityBytes {
		t.Errorf("after the plugin refused the node-only expansion (OUT_OF_RANGE): volume v is recorded at %s (node expansion owed %s) while the storage is %s: "+
			"a capacity the plugin never reached; error: %v",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed), spec.FormatSize(pv.CapacityBytes), err)
	}

	// The way out a user takes: a size the plugin supports.
	_, err2 := h.e.ExpandVolume(h.ctx, "v", 2*mib, 0)
	pv, _ = h.mem.Volume(ext)
	if err2 != nil || pv.CapacityBytes < 2*mib {
		shrink := err2 != nil && strings.Contains(err2.Error(), "cannot shrink")
		t.Errorf("then `volume expand v --size 2MiB`, a size the plugin takes: %v (refused as a shrink: %v); the storage is %s: "+
			"want it sent and the storage grown to 2MiB", err2, shrink, spec.FormatSize(pv.CapacityBytes))
	}
}

// nodeOnlyCapped is a harness whose plugin expands on the node alone (node EXPAND_VOLUME, no
// controller EXPAND_VOLUME) and holds volumes of 2 MiB at most, its volume v, 1 MiB, claimed by
// alloc web-0; with v's external ID. The node-only refusal's tests start from it.
func nodeOnlyCapped(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		c.MaxVolumeSize = 2 * mib
	})
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	return h, ext
}
