package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// registerKilledAtItsNodeStepThenRunAgain registers volume db (2MiB, claimed) through h's
// plugin, runs registrationChangedSpec (capacity_min 4MiB, a capability and mount flags added)
// killed once its expansion's commit recorded the node step owed (failpoint expand:node-owed,
// NodeExpandVolume not sent, the registration's own commit not made), and then runs the same
// registration again in the next process. It returns that run's error.
func registerKilledAtItsNodeStepThenRunAgain(t *testing.T, h *harness) error {
	t.Helper()
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
		t.Fatalf("register: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	again := registrationChangedSpec()
	if !cutShortAt(h, "expand:node-owed", 1, func() { _, _ = h.e.RegisterVolume(h.ctx, again) }) {
		t.Fatalf("precondition: the registration again never reached expand:node-owed")
	}
	reopen(t, h)
	if v := h.volumeInfo("db"); v.NodeExpansionOwed != 4*mib || slices.Contains(v.Capabilities, capab(spec.MultiNodeReaderOnly)) {
		t.Fatalf("precondition: after the kill, the node step to 4MiB owed and the registration not recorded; owed %d, capabilities %+v",
			v.NodeExpansionOwed, v.Capabilities)
	}
	sent := h.faults.Calls(csi.RPCNodeExpandVolume)
	err := func() error { _, err := h.e.RegisterVolume(h.ctx, again); return err }()
	t.Logf("the registration run again: err %v, NodeExpandVolume sent %d time(s)", err, h.faults.Calls(csi.RPCNodeExpandVolume)-sent)
	return err
}

// TestRegistrationRunAgainAfterAKillAtItsNodeStepFinishesIt: `volume register` of a spec whose
// capacity_min grows volume db (claimed) is killed once its ControllerExpandVolume's answer is
// committed, the node step owed (expand:node-owed), before NodeExpandVolume and before the
// registration's own commit. The same `volume register` run again, as volctl's crash promise
// says to, finds the recorded size at capacity_min (expandRegistered: sv.CapacityMin <=
// currentSize), sends nothing to the node, records the registration and exits 0: the command
// the user ran twice reports success while the file system the alloc sees was never grown, the
// debt sitting in the record with nothing on the command's output saying so (un-killed, the
// same registration's failed node step is an error naming the debt). `volume expand db --size
// 4MiB` run again in the same spot does send the owed step (expandLockedSaying's size == cur
// branch).
//
// Correct behaviour: a registration run again of a volume owing a node step to the size it asks
// pays it (as `volume expand` run again does), or fails saying the registration is recorded and
// the node step still owed, as the un-killed registration's error does. It pays it. Found by
// helper review75.
func TestRegistrationRunAgainAfterAKillAtItsNodeStepFinishesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	err := registerKilledAtItsNodeStepThenRunAgain(t, h)
	v := h.volumeInfo("db")
	if !slices.Contains(v.Capabilities, capab(spec.MultiNodeReaderOnly)) {
		t.Errorf("the registration run again did not record its capability: %+v (err %v)", v.Capabilities, err)
	}
	if err != nil || v.NodeExpansionOwed != 0 {
		t.Errorf("the registration run again after the kill at its node step: %v, NodeExpandVolume to %s still owed; "+
			"want it paid, the registration done", err, spec.FormatSize(v.NodeExpansionOwed))
	}
}

// TestNodeOnlyRegistrationRunAgainAfterAKillAtItsNodeStepFinishesIt is
// TestRegistrationRunAgainAfterAKillAtItsNodeStepFinishesIt through a plugin that expands only
// on the node: there the node step is the whole expansion, and the record already says 4MiB
// (expandLockedSaying records the size with the debt), so the registration run again finds
// nothing to grow and exits 0 while the storage itself is still 2MiB. Found by helper review75.
func TestNodeOnlyRegistrationRunAgainAfterAKillAtItsNodeStepFinishesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	err := registerKilledAtItsNodeStepThenRunAgain(t, h)
	v := h.volumeInfo("db")
	mv, _ := h.mem.Volume("ext-db")
	if err != nil || v.NodeExpansionOwed != 0 || mv.CapacityBytes != 4*mib {
		t.Errorf("the registration run again after the kill at its node-only expansion: %v, volume db recorded at %s, "+
			"the plugin's storage %s, NodeExpandVolume (the whole expansion) owed %s; want it sent, the storage 4MiB",
			err, spec.FormatSize(v.CapacityBytes), spec.FormatSize(mv.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed))
	}
}

// TestCreateRunAgainAfterAKillAtItsNodeStepFinishesIt: `volume create` of volume v (created at
// 1MiB, claimed) with its spec's capacity_min raised to 4MiB grows it (createVolume's grow
// path, expandLockedSaying), and is killed once the ControllerExpandVolume answer is committed
// with the node step owed (expand:node-owed). The same `volume create` run again finds the
// recorded size at capacity_min (grow is false), sends no NodeExpandVolume and returns the
// volume, exit 0 ("unchanged"), while the file system the alloc sees is still 1MiB and the debt
// is only in the record.
//
// Correct behaviour: the create run again pays the owed node step to the size it asks (as
// `volume expand` run again does), or fails naming the debt and what pays it. It pays it.
// Found by helper review75.
func TestCreateRunAgainAfterAKillAtItsNodeStepFinishesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	sv := volume("v")
	sv.CapacityMin = 4 * mib
	if !cutShortAt(h, "expand:node-owed", 1, func() { _, _ = h.e.CreateVolume(h.ctx, sv) }) {
		t.Fatalf("precondition: the create again never reached expand:node-owed")
	}
	reopen(t, h)
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Fatalf("precondition: after the kill, the node step to 4MiB owed; owed %d", v.NodeExpansionOwed)
	}
	sent := h.faults.Calls(csi.RPCNodeExpandVolume)
	_, err := h.e.CreateVolume(h.ctx, sv)
	v := h.volumeInfo("v")
	if err != nil || v.NodeExpansionOwed != 0 {
		t.Errorf("the create run again after the kill at its node step: %v, NodeExpandVolume to %s still owed, sent %d time(s): "+
			"want it paid, the file system grown to the capacity_min the command says the volume has",
			err, spec.FormatSize(v.NodeExpansionOwed), h.faults.Calls(csi.RPCNodeExpandVolume)-sent)
	}
}
