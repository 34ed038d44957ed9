package engine

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// guessOwedThroughASplitPlugin makes volume "v" on split plugin "split" whose controller half
// alone expanded it to 4MiB, the answer lost and the one sent again saying
// node_expansion_required false, so the node step is owed as a guess (NodeExpandGuessed); then
// its node half, with EXPAND_VOLUME as nodeExpands says, is registered. It returns the plugins' backend, their
// controller's faults and v's spec at capacity_min 4MiB (the size it has, the debt's size).
func guessOwedThroughASplitPlugin(t *testing.T, h *harness, nodeExpands bool) (*csitest.MemPlugin, *csitest.Faults, spec.Volume) {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	cfg.Node.ExpandVolume = nodeExpands
	cfg.Controller.ListVolumes = false // it cannot say the volume's size: the RPC is sent again
	faults := csitest.NewFaults()
	backend, nodeSock := h.controllerHalfWithVolume(cfg, csitest.WithFaults(faults))
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: 1})
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Answer: func(m proto.Message) {
		m.(*csipb.ControllerExpandVolumeResponse).NodeExpansionRequired = false
	}})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand through the controller half: %v", err)
	}
	if got := h.owed("v"); got != 4*mib {
		t.Fatalf("precondition: node expansion owed after the lost answer = %d, want 4MiB owed as a guess (the lost answer may have said node_expansion_required)", got)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatal(err)
	}
	sv := volume("v")
	sv.PluginID = "split"
	sv.CapacityMin = 4 * mib
	return backend, faults, sv
}

// TestCreateAgainThatLetsAGuessGoIsNotSaidExpanded: volume v owes a node step as a guess (its
// ControllerExpandVolume answer lost while the node half could not be asked) through a split
// plugin whose node half has no EXPAND_VOLUME. `volume create` of v's spec at the size it has
// (capacity_min 4MiB) runs payOwedNodeStep, whose expandLockedSaying lets the guess go
// (letGoOfGuess: nothing sent, the debt cleared); payOwedNodeStep takes the debt's being gone
// for "paid" and createVolume answers Expanded, which the CLI prints as `Volume "v" exists;
// expanded to the spec's capacity_min`, of a volume nothing grew, no RPC sent, the note that
// says the guess was let go (ExpansionNote) dropped. `volume expand v --size 4MiB` in the same
// spot says the guess is let go and nothing sent (TestGuessLetGoIsNotSaidExpandedOnTheNode).
//
// Correct behaviour: a debt let go is not "paid": the create says Unchanged (or carries the
// let-go note), never Expanded, when no expansion RPC was sent.
// Found by helper review75.
func TestCreateAgainThatLetsAGuessGoIsNotSaidExpanded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	backend, faults, sv := guessOwedThroughASplitPlugin(t, h, false)
	ctrlBefore := faults.Calls(csi.RPCControllerExpandVolume)
	_, outcome, err := h.e.CreateVolumeOutcome(h.ctx, sv)
	if err != nil {
		t.Fatalf("create again of v at the size it has: %v", err)
	}
	node := len(csitest.Requests[csi.NodeExpandVolumeRequest](backend))
	ctrl := faults.Calls(csi.RPCControllerExpandVolume) - ctrlBefore
	if outcome != Unchanged || node != 0 || ctrl != 0 || h.owed("v") != 0 {
		t.Errorf("create again of v (its guessed node step let go, nothing sent: NodeExpandVolume %d, ControllerExpandVolume %d) says Expanded "+
			"(`exists; expanded to the spec's capacity_min`)? outcome %v, owed %d; want Unchanged, nothing sent, the guess let go", node, ctrl, outcome, h.owed("v"))
	}
}

// TestRegisterAgainThatLetsAGuessGoIsNotSaidExpanded is
// TestCreateAgainThatLetsAGuessGoIsNotSaidExpanded through `volume register` of v's spec at its
// size (expandRegistered's `sv.CapacityMin <= currentSize` branch): it answers Expanded for the
// guess let go, and the registration records an update, printed `Volume "v" updated: expanded
// to the spec's capacity_min (4.0 MiB)`, nothing sent.
//
// Correct behaviour: Unchanged (nothing else in the spec changed), or the let-go said; never
// Expanded with no expansion RPC sent.
// Found by helper review75.
func TestRegisterAgainThatLetsAGuessGoIsNotSaidExpanded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	backend, faults, sv := guessOwedThroughASplitPlugin(t, h, false)
	sv.ExternalID = h.volumeInfo("v").ExternalID
	ctrlBefore := faults.Calls(csi.RPCControllerExpandVolume)
	_, r, err := h.e.RegisterVolumeOutcome(h.ctx, sv)
	if err != nil {
		t.Fatalf("register again of v at the size it has: %v", err)
	}
	node := len(csitest.Requests[csi.NodeExpandVolumeRequest](backend))
	ctrl := faults.Calls(csi.RPCControllerExpandVolume) - ctrlBefore
	if r.Outcome != Unchanged || node != 0 || ctrl != 0 {
		t.Errorf("register again of v (its guessed node step let go, nothing sent: NodeExpandVolume %d, ControllerExpandVolume %d) says Expanded "+
			"(`updated: expanded to the spec's capacity_min`)? outcome %v, changed %v; want Unchanged, nothing sent", node, ctrl, r.Outcome, r.Changed)
	}
}

// handedOverOwingANodeStep is claimedWithNodeExpansionOwed (volume v claimed, its node-only
// expansion to 4MiB owed, the size recorded) handed over to Nomad with --force, which leaves
// the debt for the take-back (TestOwedExpansionOfAClaimedHandedOverVolumeWaitsForTheTakeBack).
// It returns v's spec at capacity_min 4MiB, the size the volume has.
func handedOverOwingANodeStep(t *testing.T) (*harness, spec.Volume) {
	t.Helper()
	h, _ := claimedWithNodeExpansionOwed(t)
	if h.owed("v") != 4*mib || h.volumeInfo("v").CapacityBytes != 4*mib {
		t.Fatalf("precondition: v recorded at %d owing %d; want 4MiB, 4MiB owed", h.volumeInfo("v").CapacityBytes, h.owed("v"))
	}
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	sv := volume("v")
	sv.CapacityMin = 4 * mib
	return h, sv
}

// TestCreateAgainOfAHandedOverVolumeOwingANodeStepIsNotRefused: volume v, handed over to Nomad
// with --force while its node step was owed (the debt waits for the take-back: reconcile leaves
// it, TestOwedExpansionOfAClaimedHandedOverVolumeWaitsForTheTakeBack), is created again with
// its spec unchanged (capacity_min 4MiB, the size it has). Before payOwedNodeStep this was "the
// same create again (nothing to do)", exit 0, as TestHandedOverVolumeIsNotExpandedOrDetached
// promises of a handed-over volume; now createVolume sends the debt through
// expandLockedSaying, whose refuseHandedOver fails the whole create with a conflict (exit 4)
// whose advice is to deregister the volume from Nomad and take it back: a re-applied spec that
// asks nothing new fails, in every provisioning run, for as long as Nomad has the volume.
//
// Correct behaviour: payOwedNodeStep leaves a handed-over volume's debt for the take-back (as
// reconcile does) and the create says Unchanged, exit 0, nothing sent.
// Found by helper review75.
func TestCreateAgainOfAHandedOverVolumeOwingANodeStepIsNotRefused(t *testing.T) {
	t.Parallel()
	h, sv := handedOverOwingANodeStep(t)
	before := h.mem.CallCount(csi.RPCNodeExpandVolume)
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Errorf("the same create again of v, handed over to Nomad with its node step waiting for the take-back: %v; want it unchanged, the debt left for the take-back", err)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume) - before; n != 0 || h.owed("v") != 4*mib {
		t.Errorf("NodeExpandVolume sent %d time(s), %d owed; want none sent, 4MiB still owed", n, h.owed("v"))
	}
}

// TestRegisterAgainOfAHandedOverVolumeOwingANodeStepSucceeds is
// TestCreateAgainOfAHandedOverVolumeOwingANodeStepIsNotRefused through `volume register` of the
// same spec: expandRegistered's payOwedNodeStep fails at refuseHandedOver, the error is taken
// for a node step that failed (nodeStepFailed), and the registration, recorded, exits 4 saying
// "the registration is recorded, with its expansion owed (... that step failed): volume "v" is
// handed over to Nomad ...: after `nomad volume deregister v`, take it back": no step failed,
// the debt waits for the take-back by design.
//
// Correct behaviour: the registration succeeds, the debt left for the take-back.
// Found by helper review75.
func TestRegisterAgainOfAHandedOverVolumeOwingANodeStepSucceeds(t *testing.T) {
	t.Parallel()
	h, sv := handedOverOwingANodeStep(t)
	sv.ExternalID = h.volumeInfo("v").ExternalID
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Errorf("register again of v with its spec, handed over to Nomad with its node step waiting for the take-back: %v; want it registered, the debt left for the take-back", err)
	}
}
