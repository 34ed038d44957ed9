package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A node that answers NodeExpandVolume OK with capacity_bytes 0: the CSI spec makes the field
// optional, and 0 is "not stated", never the volume's size. The expansion is done (the plugin
// reaches the size asked or fails), the record keeps the size the controller answered, or the
// size asked for a plugin that expands only on the node, and nothing stays owed.
func TestNodeExpandAnsweredZeroKeepsTheSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ctrl bool
	}{{"controller and node", true}, {"node only", false}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = tt.ctrl })
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
			// capacity_bytes (field 1) 0 appended to the answer: the last one read wins.
			h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Raw: []byte{0x08, 0x00}})
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
				t.Fatalf("expand whose node answered capacity 0: %v", err)
			}
			if h.faults.Calls(csi.RPCNodeExpandVolume) == 0 {
				t.Fatal("NodeExpandVolume was not sent")
			}
			if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 {
				t.Errorf("recorded capacity %d, owed %d; want %d, nothing owed", v.CapacityBytes, v.NodeExpansionOwed, 4*mib)
			}
		})
	}
}
