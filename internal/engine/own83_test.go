package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyDebtRefusedAtARegistrationAgainKeepsTheRecordedSecrets: volume db, through a
// plugin that expands on the node alone, is expanded to 4MiB while claimed, and that
// NodeExpandVolume fails (INTERNAL): the node-only debt stands, with the size before it
// (NodeOnlyFrom, migration 0034). Its spec is then registered again at that size with a
// mistyped secret. The registration pays the debt first (payOwedNodeStep, sent with the
// spec's secrets), and the plugin refuses it for good (INVALID_ARGUMENT: the bad credential).
// sendOwedNodeStep builds the record to put back from the caller's volume, which carries the
// refused spec's secrets, and nodeOnlyRefused writes that whole record: the registration
// fails saying "the registration is not recorded", yet the mistyped secret is now recorded
// in place of the working one, sent by every later claim, unpublish and expand. The expand's
// own put-back re-reads the stored record for exactly this
// (TestNodeOnlyRegistrationRefusedForGoodKeepsTheRecordedSecrets); this new path does not.
//
// Correct behaviour: a registration that fails changes nothing of the record but the size put
// back: sendOwedNodeStep puts back the stored record (read under the lock), not the caller's
// copy with the spec's secrets.
// Found by helper review83 (own).
func TestNodeOnlyDebtRefusedAtARegistrationAgainKeepsTheRecordedSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	sv := volume("db")
	sv.Secrets = spec.Secrets{"token": "working-cred"}
	v := h.create(sv) // 1 MiB
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	owesNodeOnlyDebt(t, h, "db")
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.InvalidArgument, Message: "bad credential"})
	calls := h.faults.Calls(csi.RPCNodeExpandVolume)

	re := sv
	re.ExternalID = v.ExternalID
	re.CapacityMin = 4 * mib
	re.Secrets = spec.Secrets{"token": "mistyped-cred"}
	_, err := h.e.RegisterVolume(h.ctx, re)
	if err == nil {
		t.Fatalf("premise: the registration whose owed NodeExpandVolume the plugin refused succeeded")
	}
	if h.faults.Calls(csi.RPCNodeExpandVolume) == calls {
		t.Fatalf("premise: the registration sent no NodeExpandVolume (error: %v)", err)
	}
	row := h.volumeRow("db")
	if row.NodeExpandMin != 0 || row.CapacityBytes != v.CapacityBytes {
		t.Fatalf("premise: the refused debt was not put back (recorded at %s, owed %s): %v",
			spec.FormatSize(row.CapacityBytes), spec.FormatSize(row.NodeExpandMin), err)
	}
	if got := row.Secrets["token"]; got != "working-cred" {
		t.Errorf("the registration failed (%v), but volume db's recorded secret is now %q, the refused spec's, where it was %q: "+
			"a failed registration replaced the working credential", err, got, "working-cred")
	}
}

// TestNodeOnlyDebtWhoseControllerStepWasJustTakenIsNotPutBack: volume v's expansion to 4MiB
// was owed as a node-only one (its plugin expanded on the node alone, the NodeExpandVolume
// failed), so the size before it (1MiB) is kept to put back. The plugin comes back declaring
// the controller's EXPAND_VOLUME, and `volume expand v --size 4MiB` (as advised) sends the
// ControllerExpandVolume first (controllerBeforeNode): the plugin grows the storage to 4MiB
// and answers OK without a capacity_bytes (0), which volctl takes, recording the controller's
// step done. The NodeExpandVolume after it is refused for good. sendOwedNodeStep decides on
// its caller's copy of the volume, read before the controller's step, which still says
// "node-only, controller not done": it puts the record back at 1MiB, nothing owed, saying "so
// the storage never grew", over the controller's step just recorded. The storage is 4MiB and
// its file system owed its NodeExpandVolume; volctl says 1MiB and owes nothing.
//
// Correct behaviour: a debt whose controller step was taken in this very run (recorded
// NodeExpandControllerDone) is no node-only debt any more: the refusal leaves it owed at the
// size the storage has, as any debt of the controller's is; sendOwedNodeStep judges on the
// record as it stands after expandOnNode, not on its caller's copy.
// Found by helper review83 (own).
func TestNodeOnlyDebtWhoseControllerStepWasJustTakenIsNotPutBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	owesNodeOnlyDebt(t, h, "v")
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = true })
	// OK, the storage grown, capacity_bytes 0 (field 1 written again as 0 on the wire).
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Raw: []byte{0x08, 0x00}})
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.OutOfRange, Message: "no"})

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if h.faults.Calls(csi.RPCControllerExpandVolume) == 0 {
		t.Fatalf("premise: no ControllerExpandVolume was sent before the owed NodeExpandVolume (%v)", err)
	}
	pv, _ := h.mem.Volume(ext)
	if pv.CapacityBytes != 4*mib {
		t.Fatalf("premise: the ControllerExpandVolume did not grow the storage to 4MiB (%s): %v", spec.FormatSize(pv.CapacityBytes), err)
	}
	row := h.volumeRow("v")
	if row.CapacityBytes != pv.CapacityBytes || row.NodeExpandMin != 4*mib {
		t.Errorf("the controller grew the storage to %s and the NodeExpandVolume after it was refused, but volume v is recorded at %s, owed %s (controller done %v); "+
			"want 4MiB with its node expansion owed; the expand said: %v",
			spec.FormatSize(pv.CapacityBytes), spec.FormatSize(row.CapacityBytes), spec.FormatSize(row.NodeExpandMin), row.NodeExpandControllerDone, err)
	}
}

// owesNodeOnlyDebt makes volume id, claimed through a plugin that expands on the node alone,
// owe a node-only expansion to 4MiB with its size before recorded (its NodeExpandVolume failed
// with INTERNAL, then the fault cleared).
func owesNodeOnlyDebt(t *testing.T, h *harness, id string) {
	t.Helper()
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.Internal, Message: "busy"})
	if _, err := h.e.ExpandVolume(h.ctx, id, 4*mib, 0); err == nil {
		t.Fatalf("premise: the expand whose NodeExpandVolume failed succeeded")
	}
	if got := h.volumeRow(id); got.NodeExpandMin != 4*mib || got.NodeExpandControllerDone || got.NodeOnlyFrom == nil {
		t.Fatalf("premise: no node-only debt to 4MiB with its size before recorded: owed %s, controller done %v, from %v",
			spec.FormatSize(got.NodeExpandMin), got.NodeExpandControllerDone, got.NodeOnlyFrom)
	}
	h.faults.Clear(csi.RPCNodeExpandVolume)
}
