package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// registrationChangedSpec is regSpec("db", 4MiB) with a capability added and mount flags set:
// a registration again that grows the 2 MiB volume db and changes what only a registration
// records.
func registrationChangedSpec() spec.Volume {
	again := regSpec("db", 4*mib)
	again.Capabilities = append(again.Capabilities, capab(spec.MultiNodeReaderOnly))
	again.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}
	return again
}

// TestNodeOnlyRegistrationWhoseNodeStepFailsIsRecorded: the fix of
// TestRegistrationWhoseNodeStepFailsFinishesAsAdvised (nodeStepFailed) covers only a
// ControllerExpandVolume answered (expandLockedSaying wraps the node step's error only when
// ctrl). A plugin that expands only on the node (node EXPAND_VOLUME, no controller's) leaves the
// same debt recorded when its NodeExpandVolume fails (the whole expansion owed, paid by `volume
// expand` or reconcile), yet registerRound drops the registration: its capability and mount
// options are never recorded, and the error advises only the owed step. Followed, that succeeds,
// and the volume stays without the registration's changes, nothing saying so.
//
// Correct behaviour: as with a controller's expansion, the registration is recorded with the
// debt left owed, and the error says so. Found by helper review75.
func TestNodeOnlyRegistrationWhoseNodeStepFailsIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
		t.Fatalf("register: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})

	again := registrationChangedSpec()
	h.faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	_, regErr := h.e.RegisterVolume(h.ctx, again)
	h.faults.Clear(csi.RPCNodeExpandVolume)
	if regErr == nil {
		t.Fatalf("premise: the registration whose NodeExpandVolume failed succeeded")
	}
	if h.faults.Calls(csi.RPCNodeExpandVolume) == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent: %v", regErr)
	}
	if v := h.volumeInfo("db"); v.NodeExpansionOwed != 4*mib {
		t.Fatalf("premise: the node-only expansion to 4MiB owed; owed %d (registration: %v)", v.NodeExpansionOwed, regErr)
	}
	registrationRecordedPastItsNodeStep(t, h, regErr, "whose node-only expansion failed at NodeExpandVolume, the debt recorded,")
}

// registrationRecordedPastItsNodeStep checks that volume db's registration again (its
// multi-node-reader-only capability and noatime mount flag), whose node step did not finish
// (how), is recorded, and that its error regErr says so.
func registrationRecordedPastItsNodeStep(t *testing.T, h *harness, regErr error, how string) {
	t.Helper()
	v := h.volumeInfo("db")
	if !slices.Contains(v.Capabilities, capab(spec.MultiNodeReaderOnly)) ||
		v.MountOptions == nil || !slices.Contains(v.MountOptions.MountFlags, "noatime") {
		t.Errorf("the registration %s recorded neither its capability nor its mount flags: %+v, %+v (error: %v)",
			how, v.Capabilities, v.MountOptions, regErr)
	}
	if regErr == nil || !strings.Contains(regErr.Error(), "the registration is recorded") {
		t.Errorf("the error does not say the registration is recorded: %v", regErr)
	}
}

// TestRegistrationInterruptedAtItsNodeStepIsRecorded: a registration again that grows volume db
// (ControllerExpandVolume answered and recorded, WithoutCancel) is interrupted (Ctrl-C) while
// its NodeExpandVolume runs. The node step's error is a nodeStepFailed, so registerRound goes on
// to record the registration, but with the command's cancelled context: store.Update refuses
// to begin, the registration is not recorded, and the error returned is the store's
// interruption alone: the node step's error, which says the storage grew and what pays the
// debt, is dropped, and the capability and mount options the registration changes are lost.
//
// Correct behaviour: the registration's record, like the expansion's it follows, is written
// whatever the command's context does now (the plugin has grown the storage), and the error
// says the registration is recorded and the node step owed. Found by helper review75.
func TestRegistrationInterruptedAtItsNodeStepIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
		t.Fatalf("register: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})

	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.faults.Hang(csi.RPCNodeExpandVolume)
	go func() {
		for h.faults.Calls(csi.RPCNodeExpandVolume) == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel() // the user's Ctrl-C while NodeExpandVolume runs
	}()
	_, regErr := h.e.RegisterVolume(ctx, registrationChangedSpec())
	h.faults.Clear(csi.RPCNodeExpandVolume)
	if regErr == nil {
		t.Fatalf("premise: the registration interrupted at its NodeExpandVolume succeeded")
	}
	if h.faults.Calls(csi.RPCNodeExpandVolume) == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent: %v", regErr)
	}
	v := h.volumeInfo("db")
	if v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 4*mib {
		t.Fatalf("premise: the storage grown to 4MiB with the node step owed; recorded %d, owed %d (registration: %v)",
			v.CapacityBytes, v.NodeExpansionOwed, regErr)
	}
	registrationRecordedPastItsNodeStep(t, h, regErr, "interrupted at its node step, the storage grown,")
}

// TestNodeExpandAnswerAboveTheLimitAfterTheControllersSaysWhatIsRecorded: a plugin whose
// controller expands grows volume v to 4MiB under `volume expand v --size 4MiB --limit 5MiB`
// (ControllerExpandVolume answers 4MiB, node_expansion_required), and its NodeExpandVolume
// answers OK with 8MiB. nodeExpanded now keeps the controller's answer as the size
// (NodeExpandControllerDone: the node's is not the storage's), but aboveLimit's error, built
// from the node's answer, still says "the storage is that size now ... it is recorded at 8MiB":
// the command fails telling the user the volume is recorded at 8MiB, past its capacity_max,
// while the record (and the plugin's listing) says 4MiB, within it.
//
// Correct behaviour: what the error says is recorded is what is recorded: where the node's
// answer is not taken as the size, it is not said to be the storage's size nor the recorded one
// (the controller's 4MiB is within the limit): the expand succeeds, the node's answer said in
// its event. Found by helper review75.
func TestNodeExpandAnswerAboveTheLimitAfterTheControllersSaysWhatIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.mem.AnswerNodeExpandWith(8 * mib)
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 5*mib)
	h.mem.AnswerNodeExpandWith(0)
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes != 4*mib {
		t.Fatalf("premise: the storage is %d after the controller's expansion, want 4MiB (expand: %v)", mv.CapacityBytes, err)
	}
	v := h.volumeInfo("v")
	if v.CapacityBytes != 4*mib {
		t.Fatalf("premise: the controller's answer, 4MiB, is the recorded size; recorded %d (expand: %v)", v.CapacityBytes, err)
	}
	if err != nil {
		t.Errorf("volume v is recorded at %s (the controller's answer) and the plugin lists it at 4MiB, within the 5MiB limit; "+
			"the expand fails: %v", spec.FormatSize(v.CapacityBytes), err)
	}
	if v.NodeExpansionOwed != 0 {
		t.Errorf("the node answered OK, and its step is still owed: %d", v.NodeExpansionOwed)
	}
}

// TestCreateReplayWithAnotherCapacityMaxIsNotSaidCreatedWithIt: a create of volume b with
// capacity_max 16MiB loses every CreateVolume answer (recorded creating). The same create run
// again with capacity_max 2MiB replays the recorded request (capacity_max 16MiB, as CSI's
// idempotency by name requires) and exits 0 saying the volume is created; the spec's 2MiB is
// neither applied nor refused: the record keeps 16MiB, so `volume expand b --size 8MiB` then
// grows it past the 2MiB the spec allowed, and the very same create run once more is refused
// as "does not change its capacity_max". capacityMaxNotChangedByCreate covers only a volume
// found ready; the replay's createChanges names capabilities, mount options and secrets alone.
//
// Correct behaviour: a replay whose spec gives another capacity_max than the recorded one is
// refused as the replay's other changes are (finish it with the first spec, then register it
// again), or records it; it is not reported created under this spec with the old limit kept.
// It is refused, and the test follows the advice. Found by helper review75.
func TestCreateReplayWithAnotherCapacityMaxIsNotSaidCreatedWithIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("b")
	sv.CapacityMin, sv.CapacityMax = 1*mib, 16*mib
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("premise: create with every answer lost succeeded")
	}
	if v := h.volumeInfo("b"); v.State != "creating" {
		t.Fatalf("premise: after the lost answers the volume is %q; want it recorded as being created", v.State)
	}
	again := sv
	again.CapacityMax = 2 * mib
	_, err := h.e.CreateVolume(h.ctx, again)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "capacity_max") {
		t.Fatalf("create of b with capacity_max 2MiB over its interrupted create with 16MiB: %v; want refused, naming capacity_max", err)
	}
	// As advised: finished with the first spec, then registered again with this one.
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("the advised create with the first spec: %v", err)
	}
	reg := again
	reg.ExternalID = h.volumeInfo("b").ExternalID
	if _, err := h.e.RegisterVolume(h.ctx, reg); err != nil {
		t.Fatalf("the advised registration again with capacity_max 2MiB: %v", err)
	}
	if v := h.volumeInfo("b"); v.RequestedMax != again.CapacityMax {
		t.Errorf("after the advised registration, volume b's capacity_max is %s; want 2MiB", spec.FormatSize(v.RequestedMax))
	}
}
