package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestEventsNameTheRPCThatDidIt holds the event log to docs/json.md's `rpc`: the CSI RPC an
// event is about, the one that did it. Every controller step of a volume's life that the
// plugin carried out is recorded naming its RPC, so that `events --json` filtered on rpc finds
// all of them: the create, the expansion, the snapshot's create and delete, the delete.
func TestEventsNameTheRPCThatDidIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a")) // 1 MiB
	if _, err := h.e.ExpandVolume(h.ctx, "a", 2*mib, 0); err != nil {
		t.Fatal(err)
	}
	snap, err := h.e.CreateSnapshot(h.ctx, "a", "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteVolume(h.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"volume-create":   csi.RPCCreateVolume,
		"volume-expand":   csi.RPCControllerExpandVolume,
		"snapshot-create": csi.RPCCreateSnapshot,
		"snapshot-delete": csi.RPCDeleteSnapshot,
		"volume-delete":   csi.RPCDeleteVolume,
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		rpc, ok := want[ev.Kind]
		if !ok {
			continue
		}
		seen[ev.Kind] = true
		if ev.RPC != rpc {
			t.Errorf("%s event %q names rpc %q, want %q, the RPC that did it", ev.Kind, ev.Message, ev.RPC, rpc)
		}
	}
	for kind := range want {
		if !seen[kind] {
			t.Errorf("no %s event recorded", kind)
		}
	}
}
