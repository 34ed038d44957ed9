package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestSecondNodeIDChangeStillNamesTheVolumeAttachedElsewhere: a plugin restarted twice with
// another NodeGetInfo node_id each time (node-1, node-2, node-3)
// while a claim holds its volume's attachment to node-1: the second restart's event named both
// node IDs but not volume v, still attached to node-1, whose restore here is refused
// (attachedElsewhere) just as after the first. The event is to name the volumes attached to
// another node than the plugin reports now, whichever node ID the plugin had last.
// Found by helper review70.
func TestSecondNodeIDChangeStillNamesTheVolumeAttachedElsewhere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	h.restartWith(func(c *csitest.MemConfig) { c.NodeID = "node-2" })
	if evs := h.capabilityEventsSeenByAProbe(); len(evs) != 1 || !strings.Contains(evs[0].Message, `"v"`) {
		t.Fatalf("events after the first restart = %+v; want one naming v", evs)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID = "node-3" })
	evs := h.capabilityEventsSeenByAProbe() // newest first
	if len(evs) != 2 {
		t.Fatalf("events after the second restart = %+v; want two", evs)
	}
	t.Logf("event: %s", evs[0].Message)
	if st, _ := h.staging("v"); st.NodeID != "node-1" || !st.ControllerPublished {
		t.Fatalf("staging %+v; want v recorded attached to node-1", st)
	}
	if !strings.Contains(evs[0].Message, `"v"`) || !strings.Contains(evs[0].Message, `"node-1"`) {
		t.Errorf("the event after the second node ID change does not name volume v, still attached to node \"node-1\" (which no claim or restore stages here): %q", evs[0].Message)
	}
}
