package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// offlineOnly makes the mem plugin one that expands only offline: the controller's
// EXPAND_VOLUME with VOLUME_EXPANSION OFFLINE, no ONLINE (its ControllerExpandVolume refuses a
// volume with a target, as the CSI spec says it SHALL NOT grow a published one).
func offlineOnlyExpansion(c *csitest.MemConfig) {
	c.Controller.ExpandVolume = true
	c.Plugin.VolumeExpansionOnline, c.Plugin.VolumeExpansionOffline = false, true
}

// rpcOrder is the plugin's calls of the rpcs named, in the order it received them.
func rpcOrder(h *harness, rpcs ...string) []string {
	var out []string
	for _, c := range h.mem.Calls() {
		for _, r := range rpcs {
			if c.RPC == r {
				out = append(out, r)
			}
		}
	}
	return out
}

// A node-only expansion's debt (the whole expansion, NodeExpandVolume owed: the controller
// never had the size) comes due through a plugin back declaring the controller's EXPAND_VOLUME
// with OFFLINE expansion alone. mend33b sent the controller step first only for ONLINE, so the
// claim sent NodeExpandVolume alone, which such a plugin does not take as the whole expansion:
// recorded 4MiB, nothing owed, the storage at 1MiB, and nothing said (expand34). The
// ControllerExpandVolume is sent while the volume is offline, before the claim's
// ControllerPublishVolume, then the NodeExpandVolume once the claim published it.
func TestOwedNodeExpansionOfAnOfflineOnlyPluginGetsItsControllerStepBeforeThePublish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	h.restartWith(offlineOnlyExpansion)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	mv, _ := h.mem.Volume(ext)
	v := h.volumeInfo("v")
	if mv.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 || v.CapacityBytes != 4*mib {
		t.Errorf("after the claim: storage %d, recorded %d, owed %d; want the storage grown to the 4MiB recorded, nothing owed",
			mv.CapacityBytes, v.CapacityBytes, v.NodeExpansionOwed)
	}
	got := rpcOrder(h, csi.RPCControllerExpandVolume, csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodeExpandVolume)
	want := []string{csi.RPCControllerExpandVolume, csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodeExpandVolume}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the claim sent %v; want %v (the controller's step offline, before the attach)", got, want)
	}
}

// The same debt come due while the volume is on the node: the offline controller step failed
// before the claim's attach (the claim goes on), so the volume is published with the
// controller's step owed. NodeExpandVolume alone would grow nothing, and ControllerExpandVolume
// SHALL NOT be sent: the expansion waits, and reconcile and the expand say it is owed and when it
// will be done. Once the claim is released, reconcile sends the controller's step offline and
// records it; the next claim sends the NodeExpandVolume alone.
func TestOwedNodeExpansionOfAnOfflineOnlyPluginWaitsWhileTheVolumeIsOnTheNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	h.restartWith(offlineOnlyExpansion)
	h.faults.FailOnce(csi.RPCControllerExpandVolume, codes.Internal)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
		t.Errorf("NodeExpandVolume sent %d times with the controller's step not done", n)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Fatalf("after the claim: owed %d; want 4MiB still owed", v.NodeExpansionOwed)
	}
	rep, err := h.e.Reconcile(h.ctx)
	said := fmt.Sprint(err, rep.Problems)
	if err == nil && rep.OK() {
		t.Errorf("reconcile with the expansion waiting said nothing: %+v", rep.Actions)
	}
	for _, w := range []string{`plugin "mem" expands volumes only offline`, "owed", "release", "volctl reconcile"} {
		if !strings.Contains(said, w) {
			t.Errorf("reconcile said %s; want it to say %q", said, w)
		}
	}
	_, err = h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if !errors.Is(err, ErrConflict) || !strings.Contains(fmt.Sprint(err), "only offline") {
		t.Errorf("expand to the size owed while claimed = %v; want a conflict saying the plugin expands only offline", err)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume) + h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("%d expansion RPCs reached the plugin while the volume was published", n)
	}
	h.release("v", "a")
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile once released: %v (%+v)", err, rep.Problems)
	}
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes != 4*mib || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 {
		t.Errorf("reconcile of the released volume: storage %d, ControllerExpandVolume sent %d times; want 4MiB, once", mv.CapacityBytes, h.mem.CallCount(csi.RPCControllerExpandVolume))
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Errorf("owed %d after the controller's step; want the node's 4MiB still owed, for the next publish", v.NodeExpansionOwed)
	}
	// Another pass sends nothing: the controller's step is recorded done.
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile again: %v (%+v)", err, rep.Problems)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if c, n := h.mem.CallCount(csi.RPCControllerExpandVolume), h.mem.CallCount(csi.RPCNodeExpandVolume); c != 1 || n != 1 {
		t.Errorf("ControllerExpandVolume sent %d times, NodeExpandVolume %d; want once each", c, n)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || v.CapacityBytes != 4*mib {
		t.Errorf("after the claim: recorded %d, owed %d; want 4MiB, nothing owed", v.CapacityBytes, v.NodeExpansionOwed)
	}
}

// The honest offline-only plugin: expanded offline, its controller answers
// node_expansion_required; the claim's NodeExpandVolume fails once, so the node's step is owed
// while the volume is published. The controller has had the size (recorded with the debt), so
// reconcile sends the NodeExpandVolume alone, at once: the expansion does not wait for a
// release it does not need. And an ONLINE plugin's usual debt is paid without the extra
// ControllerExpandVolume mend33b sent before it.
func TestOwedNodeStepAfterTheControllersAnswerIsSentAlone(t *testing.T) {
	t.Parallel()
	for _, plugin := range []string{"offline only", "online"} {
		t.Run(plugin, func(t *testing.T) {
			t.Parallel()
			var h *harness
			if plugin == "online" {
				h = newHarness(t, nil)
			} else {
				h = newHarness(t, offlineOnlyExpansion)
			}
			ext := h.create(volume("v")).ExternalID
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
				t.Fatalf("expand: %v", err)
			}
			h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
				t.Fatalf("owed %d after the claim's NodeExpandVolume failed; want 4MiB", v.NodeExpansionOwed)
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
			}
			if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 1 {
				t.Errorf("ControllerExpandVolume sent %d times; want once, the expand's", n)
			}
			mv, _ := h.mem.Volume(ext)
			if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || mv.CapacityBytes != 4*mib || h.mem.CallCount(csi.RPCNodeExpandVolume) != 1 {
				t.Errorf("after reconcile: owed %d, storage %d, NodeExpandVolume reached the plugin %d times; want nothing owed, 4MiB, once",
					v.NodeExpansionOwed, mv.CapacityBytes, h.mem.CallCount(csi.RPCNodeExpandVolume))
			}
		})
	}
}

// A node-only expansion's debt owed while the volume is published, through a plugin that comes
// back advertising CONTROLLER_SERVICE, re-registered by its node half alone: its controller,
// not registered, may be the one that grows the storage. NodeExpandVolume alone was sent and
// the debt cleared (expand34). The expansion waits for the controller half, saying so; once it
// is registered, reconcile sends ControllerExpandVolume, then NodeExpandVolume. A fresh expand
// through the node half alone is refused naming the half, as a create or delete is, rather
// than done as a node-only one.
func TestOwedNodeExpansionThroughANodeHalfAloneWaitsForTheControllerHalf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand with the node failing succeeded")
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = true })
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: h.socket}); err != nil {
		t.Fatalf("register the node half alone: %v", err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if said := fmt.Sprint(err, rep.Problems); !strings.Contains(said, "only its node half is registered") || !strings.Contains(said, "owed") {
		t.Errorf("reconcile said %s; want it to name the missing controller half and the owed expansion", said)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib || h.mem.CallCount(csi.RPCNodeExpandVolume) != 0 {
		t.Errorf("owed %d, NodeExpandVolume sent %d times; want 4MiB still owed, none sent", v.NodeExpansionOwed, h.mem.CallCount(csi.RPCNodeExpandVolume))
	}
	_, err = h.e.ExpandVolume(h.ctx, "v", 8*mib, 0)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), "only its node half is registered") {
		t.Errorf("expand through the node half alone = %v; want it refused naming the missing controller half", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib {
		t.Errorf("recorded %d after the refused expand; want 4MiB", v.CapacityBytes)
	}
	// The controller registered too: one process serves both halves here, so a monolith.
	h.registerPlugin("mem", h.socket)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile with both halves: %v (%+v)", err, rep.Problems)
	}
	mv, _ := h.mem.Volume(ext)
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || mv.CapacityBytes != 4*mib {
		t.Errorf("after reconcile: owed %d, storage %d; want nothing owed, 4MiB", v.NodeExpansionOwed, mv.CapacityBytes)
	}
	if got := rpcOrder(h, csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume); fmt.Sprint(got) != fmt.Sprint([]string{csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume}) {
		t.Errorf("reconcile sent %v; want the controller's step, then the node's", got)
	}
}

// The offline controller step answered OK below the size owed (the spec: it reaches
// required_bytes or fails): the storage is not grown, so nothing records the controller's step,
// and the NodeExpandVolume is not sent after the attach: the expansion stays owed, as one whose
// ControllerExpandVolume failed. One answered above the size owed is recorded as the size.
func TestOfflineControllerStepAnsweredShortOrLong(t *testing.T) {
	t.Parallel()
	for _, answer := range []int64{2 * mib, 6 * mib} {
		t.Run(fmt.Sprint(answer), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
			h.create(volume("v"))
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
				t.Fatalf("node-only expand: %v", err)
			}
			h.restartWith(offlineOnlyExpansion)
			h.mem.AnswerExpandWith(answer)
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			v := h.volumeInfo("v")
			if answer < 4*mib {
				if v.NodeExpansionOwed != 4*mib || h.mem.CallCount(csi.RPCNodeExpandVolume) != 0 {
					t.Errorf("answered short: owed %d, NodeExpandVolume sent %d times; want 4MiB still owed, none sent",
						v.NodeExpansionOwed, h.mem.CallCount(csi.RPCNodeExpandVolume))
				}
				return
			}
			if v.NodeExpansionOwed != 0 || v.CapacityBytes != answer || h.mem.CallCount(csi.RPCNodeExpandVolume) != 1 {
				t.Errorf("answered %d: owed %d, recorded %d, NodeExpandVolume sent %d times; want nothing owed, the size answered, once",
					answer, v.NodeExpansionOwed, v.CapacityBytes, h.mem.CallCount(csi.RPCNodeExpandVolume))
			}
		})
	}
}

// A node that declares EXPAND_VOLUME and answers NodeExpandVolume UNIMPLEMENTED: the expansion
// stays owed, and the error says the plugin contradicts itself and that running it again gets
// the same answer, where it said only "run the expand again", which answered the same for good.
func TestNodeExpandUnimplementedByANodeThatDeclaresIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailAlways(csi.RPCNodeExpandVolume, codes.Unimplemented)
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	for _, w := range []string{`plugin "mem" declares the node capability EXPAND_VOLUME but answered NodeExpandVolume`, "Unimplemented", "the same answer comes back",
		"it stays owed", "`volctl volume expand v --size 4MiB`"} {
		if !strings.Contains(fmt.Sprint(err), w) {
			t.Errorf("expand = %v; want it to say %q", err, w)
		}
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Errorf("owed %d; want 4MiB still owed", v.NodeExpansionOwed)
	}
}
