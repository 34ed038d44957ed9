package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// The adversary: one plugin process registered under three IDs whose sockets are spelled
// differently (the path as written, through a symlinked directory, with a "/./" in it), hanging
// NodeUnpublishVolume for every volume. The pass's record of hung sockets was keyed by the path
// as written, so each spelling was a socket of its own: the pass waited two timeouts for each
// ID, six in all, where one process had hung after two. It is one socket however spelled
// (oneSocket): two timeouts, and every other volume of the three IDs left for the next pass.
func TestPassTakesEverySpellingOfAHungSocketForHung(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	for i, sock := range otherSpellings(t, h.socket) {
		h.registerPlugin([]string{"mem2", "mem3"}[i], sock)
	}
	var ids []string
	for _, plugin := range []string{"mem", "mem2", "mem3"} {
		for _, n := range []string{"1", "2"} {
			v := volume(plugin + "-" + n)
			v.PluginID = plugin
			h.create(v)
			h.claim(ClaimRequest{VolumeID: v.ID, Alloc: "web"})
			ids = append(ids, v.ID)
		}
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	for _, id := range ids {
		if _, err := h.e.Release(h.ctx, id, "web"); err == nil {
			t.Fatalf("release of %s with NodeUnpublishVolume unavailable succeeded", id)
		}
	}
	h.faults.Clear()
	h.open(hungConfig())
	h.faults.ResetCounts()
	h.faults.Hang(csi.RPCNodeUnpublishVolume)

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil {
		t.Fatal("reconcile with the plugin hung reported no problem")
	}
	if n := h.callsAfterIdle(t, csi.RPCNodeUnpublishVolume); n != 2 {
		t.Errorf("NodeUnpublishVolume sent %d times to the hung plugin in one pass through its three spellings, want 2", n)
	}
	if len(rep.Problems) != len(ids) {
		t.Errorf("problems of the pass = %+v, want one for each of %v", rep.Problems, ids)
	}
	for _, id := range ids {
		if live := h.liveClaims(id); len(live) != 1 || !live[0].NeedsReconcile {
			t.Errorf("claim of %s after the pass = %+v, want it held for the next pass", id, live)
		}
	}
}
