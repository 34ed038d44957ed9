package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A pending controller expansion of a volume on no path on this node (no claim, nothing
// staged), finished node-only through a plugin back with node EXPAND_VOLUME alone (fix32b):
// reconcile's report, and the expand's note, said the expansion "was finished node-only",
// while NodeExpandVolume, the whole expansion, was not sent and the storage had not grown
// (recheck33b). They say it is owed, sent at the next publish; the claim then sends it once
// and the storage grows to the size recorded.
func TestPendingExpansionFinishedNodeOnlyOnNoPathSaysItIsOwed(t *testing.T) {
	for _, next := range []string{"reconcile", "expand again"} {
		t.Run(next, func(t *testing.T) {
			h := newHarness(t, nil)
			ext := h.create(volume("v")).ExternalID
			expansionPending(h, "v", 4<<30)
			h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
			var said string
			if next == "reconcile" {
				rep, err := h.e.Reconcile(h.ctx)
				if err != nil || !rep.OK() {
					t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
				}
				for _, a := range rep.Actions {
					said += a.Message + "\n"
				}
			} else {
				v, err := h.e.ExpandVolume(h.ctx, "v", 4<<30, 0)
				if err != nil {
					t.Fatalf("expand: %v", err)
				}
				said = v.ExpansionNote
			}
			for _, want := range []string{"finished node-only, to 4GiB", "that NodeExpandVolume was not sent", `volume "v" is on no path on this node`,
				"sent when a claim next publishes the volume here", "the storage has not grown until then"} {
				if !strings.Contains(said, want) {
					t.Errorf("%s said %q; want it to say %s", next, said, want)
				}
			}
			if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
				t.Errorf("NodeExpandVolume sent %d times with the volume on no path", n)
			}
			if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4<<30 || v.ExpansionPending != 0 {
				t.Errorf("owed %d, pending %d; want 4GiB owed, nothing pending", v.NodeExpansionOwed, v.ExpansionPending)
			}
			// The honest way on: the claim sends it, once, and the storage grows.
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			if mv, _ := h.mem.Volume(ext); h.mem.CallCount(csi.RPCNodeExpandVolume) != 1 || mv.CapacityBytes != 4<<30 || h.volumeInfo("v").NodeExpansionOwed != 0 {
				t.Errorf("after the claim: NodeExpandVolume sent %d times, storage %d, owed %d; want once, 4GiB, none",
					h.mem.CallCount(csi.RPCNodeExpandVolume), mv.CapacityBytes, h.volumeInfo("v").NodeExpansionOwed)
			}
		})
	}
}
