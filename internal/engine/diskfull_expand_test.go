package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The state dir fills up right after ControllerExpandVolume, and after NodeExpandVolume,
// answered OK for a claimed volume: the expand fails saying the disk is full, the record keeps
// the expansion pending (or the node's owed), and once space is freed, reconcile records the
// size the plugin has and sends the node expansion, nothing left pending or owed.
func TestDiskFullAfterExpand(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own
			h, after, free := diskFullHarness(t)
			h.create(volume("db"))
			h.claim(ClaimRequest{VolumeID: "db", Alloc: "a"})
			*after = rpc
			_, err := h.e.ExpandVolume(h.ctx, "db", 2<<20, 0)
			wantDiskFull(t, "expand", err, h)
			v := h.volumeInfo("db")
			if v.ExpansionPending == 0 && v.NodeExpansionOwed == 0 {
				t.Fatalf("after the expand cut short by a full disk: %+v; want its expansion recorded pending or owed", v)
			}
			free()
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile once space is freed: %v", err)
			}
			v = h.volumeInfo("db")
			if v.CapacityBytes != 2<<20 || v.ExpansionPending != 0 || v.NodeExpansionOwed != 0 {
				t.Fatalf("after reconcile: capacity %d, pending %d, owed %d; want 2 MiB, nothing pending or owed", v.CapacityBytes, v.ExpansionPending, v.NodeExpansionOwed)
			}
			h.release("db", "a")
		})
	}
}
