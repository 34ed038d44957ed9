package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestExpandPastANodeOnlyDebtThroughAPluginNowControllerOnlyClearsIt: a node-only expansion
// (node EXPAND_VOLUME alone) of a volume on no path here left its NodeExpandVolume owed at
// 4MiB; the plugin came back declaring the controller's EXPAND_VOLUME and not the node's, and
// `volume expand --size 8MiB` sent ControllerExpandVolume, which grew the storage to 8MiB (past
// the debt). The owedBefore branch then marked the debt NodeExpandControllerDone, which turned
// controllerAloneOwes false, so expandOnNode failed the expand asking for the node's
// EXPAND_VOLUME ("its controller answered node_expansion_required", which it never did), and
// the debt stayed owed for good: no path clears a ControllerDone debt through a node without
// EXPAND_VOLUME. docs/architecture.md: "A plugin back with the controller's EXPAND_VOLUME and
// without the node's has no node step of its own (CSI sends such a node no NodeExpandVolume):
// the ControllerExpandVolume is the whole of a debt owed as a node-only expansion, and its
// answer's record clears the debt". Found by helper review73 (own2).
func TestExpandPastANodeOnlyDebtThroughAPluginNowControllerOnlyClearsIt(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h, ext := owedNodeOnlyToFourMiB(t)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false })
	_, err := h.e.ExpandVolume(h.ctx, "v", 8*mib, 0)
	mv, _ := h.mem.Volume(ext)
	v := h.volumeInfo("v")
	if mv.CapacityBytes < 8*mib {
		t.Fatalf("the storage is %d after the expand to 8MiB through the controller (err %v); want 8MiB", mv.CapacityBytes, err)
	}
	if err != nil || v.NodeExpansionOwed != 0 {
		t.Errorf("expand to 8MiB through a plugin now controller-only, the storage grown: err %v, owed %d (waits: %q); "+
			"want no error and nothing owed: its node has no step of its own", err, v.NodeExpansionOwed, v.NodeExpansionWaits)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 {
		t.Errorf("after reconcile: owed %d still (waits: %q); nothing pays it through a node without EXPAND_VOLUME", v.NodeExpansionOwed, v.NodeExpansionWaits)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
		t.Errorf("NodeExpandVolume sent %d times to a node without EXPAND_VOLUME", n)
	}
}

// TestCreateReplayAboveTheRecordedCapacityMaxIsRefusedBeforeItSendsAnything: a create (capacity
// 1MiB to 4MiB) whose every CreateVolume answer was lost stayed recorded as being created; the
// create run again from a spec with capacity_min 8MiB and no capacity_max (which keeps the
// recorded 4MiB) replayed the interrupted CreateVolume, making the volume, and only then was
// refused by aboveRecordedMax, saying "nothing was sent" of a command that had just sent a
// CreateVolume and created the volume, and failing a create that created it.
// docs/architecture.md: "A spec without `capacity_max` keeps the one recorded ...: a
// `capacity_min` above it is refused, naming the `capacity_max` to give, nothing sent
// (`aboveRecordedMax`)". Found by helper review73 (own2).
func TestCreateReplayAboveTheRecordedCapacityMaxIsRefusedBeforeItSendsAnything(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h := newHarness(t, nil)
	sv := volume("b")
	sv.CapacityMin, sv.CapacityMax = 1*mib, 4*mib
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create with every answer lost succeeded")
	}
	if v := h.volumeInfo("b"); v.State != "creating" {
		t.Fatalf("after the lost answers the volume is %q; want it recorded as being created", v.State)
	}
	before := h.mem.CallCount(csi.RPCCreateVolume)
	again := volume("b")
	again.CapacityMin = 8 * mib // capacity_max left out: the recorded 4MiB stays
	_, err := h.e.CreateVolume(h.ctx, again)
	sent := h.mem.CallCount(csi.RPCCreateVolume) - before
	if err == nil {
		t.Fatalf("create again with capacity_min 8MiB above the recorded capacity_max 4MiB succeeded")
	}
	if sent > 0 && strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("create again sent %d CreateVolume (the volume is %q now), then failed saying %q; "+
			"want it refused before the replay, nothing sent, as the docs say", sent, h.volumeInfo("b").State, err)
	}
}

// TestReconcilePayingAnOwedExpansionByTheControllerAloneOnTheNodeDoesNotSayNodeExpanded: a
// node-only expansion of a volume published here failed its NodeExpandVolume and stayed owed;
// the plugin came back declaring the controller's EXPAND_VOLUME and not the node's (ONLINE),
// and reconcile paid the debt by ControllerExpandVolume alone (payControllerAlone), sending no
// NodeExpandVolume, yet reported "volume expanded on the node", as reconcileExpansions words
// every debt of a volume on the node. `volume expand` and reconcile's step off the node were
// made to say it was the controller's step (controllerAlonePaid); docs/architecture.md: the
// ControllerExpandVolume "is the whole of a debt owed as a node-only expansion ... (... `volume
// expand`, which says so in its note, reconcile, ...)" and, before, "the advice named a node
// capability the plugin does not need". Found by helper review73 (own2).
func TestReconcilePayingAnOwedExpansionByTheControllerAloneOnTheNodeDoesNotSayNodeExpanded(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h := nodeOnlyStepFailedOnAClaimedVolume(t)
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Fatalf("before: owed %d; want 4MiB owed (its NodeExpandVolume failed)", v.NodeExpansionOwed)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false })
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n == 0 || h.volumeInfo("v").NodeExpansionOwed != 0 {
		t.Fatalf("reconcile sent ControllerExpandVolume %d times, owed %d after (problems %+v); want the debt paid by the controller", n, h.volumeInfo("v").NodeExpansionOwed, rep.Problems)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
		t.Fatalf("NodeExpandVolume sent %d times to a node without EXPAND_VOLUME", n)
	}
	for _, a := range rep.Actions {
		if a.VolumeID == "v" && strings.Contains(a.Message, "expanded on the node") {
			t.Errorf("reconcile reported %q of a debt the controller's ControllerExpandVolume paid, no NodeExpandVolume sent", a.Message)
		}
	}
}

// nodeOnlyStepFailedOnAClaimedVolume is a harness whose plugin expands through its node alone,
// volume v claimed by alloc a and expanded to 4MiB, its NodeExpandVolume failed: the whole
// expansion owed, the faults cleared.
func nodeOnlyStepFailedOnAClaimedVolume(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.FailedPrecondition, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4<<20, 0); err == nil {
		t.Fatal("node-only expand whose NodeExpandVolume failed succeeded")
	}
	h.faults.Clear(csi.RPCNodeExpandVolume)
	return h
}
