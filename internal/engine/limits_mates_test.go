package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// Plugin IDs registered on one socket are one plugin process, one node plugin (docs/architecture.md,
// One storage volume, one driver): its NodeGetInfo max_volumes_per_node bounds the volumes on the
// node through all of them, not through each. With a limit of 1, a volume claimed through "mem"
// leaves no room for one of "mem2" on the same socket: the claim is refused at admission, a
// conflict naming the limit and the volume there, before any RPC, rather than a
// ControllerPublishVolume over the plugin's limit.
func TestMaxVolumesPerNodeCountsThePluginIDsOfOneSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MaxVolumes = 1 })
	h.registerPlugin("mem2", h.socket)
	h.create(volume("a"))
	b := volume("b")
	b.PluginID = "mem2"
	h.create(b)
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web-0"})
	h.mem.ResetCalls()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "web-1"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `allows 1 volume(s) per node`) ||
		!strings.Contains(err.Error(), `has 1: volume "a"`) {
		t.Fatalf("claim through another plugin ID of the same socket, over its limit = %v\nwant a conflict naming the limit and volume a", err)
	}
	if got := h.rpcs(); len(got) != 0 {
		t.Errorf("RPCs for the refused claim: %v, want none", got)
	}
	h.release("a", "web-0")
	h.claim(ClaimRequest{VolumeID: "b", Alloc: "web-1"})
}
