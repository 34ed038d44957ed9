package engine

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

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
	t.Parallel()
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

// The debt above, come due after the plugin came back declaring the controller's
// EXPAND_VOLUME again (recheck33b, mend33b): a claim publishes the volume, and the owed
// NodeExpandVolume alone, which a plugin with a controller step does not take as the whole
// expansion, grew nothing: recorded 4GiB, nothing owed or pending, the storage at 1MiB, and
// reconcile said nothing. The plugin's current declaration rules when the work is sent: the
// ControllerExpandVolume first, at the size recorded (idempotent where the storage has it),
// then the NodeExpandVolume. Every node expansion owed is sent so (a node-only expansion's
// owed step, not only a pending one's): "node-only expand" holds that. One the controller
// refuses leaves the debt owed, and reconcile says so, and sends it again.
func TestOwedNodeExpansionThroughAPluginBackWithControllerExpandSendsItFirst(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"pending, finished node-only", "node-only expand"} {
		for _, due := range []string{"claim", "claim refused, reconcile"} {
			t.Run(how+"/"+due, func(t *testing.T) {
				t.Parallel()
				var h *harness
				if how == "node-only expand" {
					h = newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
				} else {
					h = newHarness(t, nil)
				}
				ext := h.create(volume("v")).ExternalID
				if how == "node-only expand" {
					if _, err := h.e.ExpandVolume(h.ctx, "v", 4<<30, 0); err != nil {
						t.Fatalf("expand: %v", err)
					}
				} else {
					expansionPending(h, "v", 4<<30)
					h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
					if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
						t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
					}
				}
				if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4<<30 || v.CapacityBytes != 4<<30 {
					t.Fatalf("before: recorded %d, owed %d; want 4GiB, 4GiB owed", v.CapacityBytes, v.NodeExpansionOwed)
				}
				h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = true })
				if due == "claim refused, reconcile" {
					h.faults.FailAlways(csi.RPCControllerExpandVolume, codes.Internal)
				}
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				if due == "claim refused, reconcile" {
					if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4<<30 {
						t.Errorf("ControllerExpandVolume refused: owed %d, want 4GiB still owed", v.NodeExpansionOwed)
					}
					if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
						t.Errorf("NodeExpandVolume sent %d times after the ControllerExpandVolume before it failed", n)
					}
					rep, err := h.e.Reconcile(h.ctx)
					if err == nil && rep.OK() {
						t.Errorf("reconcile with the ControllerExpandVolume refused reported nothing: %+v", rep.Actions)
					} else if said := fmt.Sprint(err, rep.Problems); !strings.Contains(said, "ControllerExpandVolume") || !strings.Contains(said, "owed") {
						t.Errorf("reconcile said %s; want it to name ControllerExpandVolume and the owed expansion", said)
					}
					h.faults.Clear(csi.RPCControllerExpandVolume)
					if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
						t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
					}
				}
				mv, _ := h.mem.Volume(ext)
				v := h.volumeInfo("v")
				if mv.CapacityBytes != 4<<30 || v.NodeExpansionOwed != 0 || v.ExpansionPending != 0 || v.CapacityBytes != 4<<30 {
					t.Errorf("after: storage %d, recorded %d, owed %d, pending %d; want the storage grown to the 4GiB recorded, nothing owed or pending",
						mv.CapacityBytes, v.CapacityBytes, v.NodeExpansionOwed, v.ExpansionPending)
				}
				if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 1 {
					t.Errorf("NodeExpandVolume sent %d times, want once", n)
				}
			})
		}
	}
}
