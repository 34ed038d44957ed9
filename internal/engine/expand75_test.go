package engine

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegistrationWhoseNodeStepFailsFinishesAsAdvised: a registration again with a larger
// capacity_min and other changes (here a new capability and mount options) of a volume a claim
// holds grows the storage (ControllerExpandVolume answered, the new size and the node expansion
// owed committed by expandLockedSaying), then NodeExpandVolume fails. The registration fails
// (expandRegistered returns the node step's error before the registration's own commit), and its
// error advises only the owed step: "run `volctl volume expand db --size 4MiB` again or `volctl
// reconcile`". Followed, that pays the debt and exits 0, but the registration's own changes
// (the capability added, the mount options) were never recorded, and nothing says so: the user
// did what the error said, everything succeeded, and a claim asking the new capability is
// refused as one the volume does not have.
//
// Correct behaviour, as `volume expand` leaves such a debt: the registration is recorded with
// its expansion, the node step left owed, and the error says so; what it advises then pays the
// debt. Found by helper review75.
func TestRegistrationWhoseNodeStepFailsFinishesAsAdvised(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
		t.Fatalf("register: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})

	again := regSpec("db", 4*mib)
	again.Capabilities = append(again.Capabilities, capab(spec.MultiNodeReaderOnly))
	again.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}
	h.faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	_, regErr := h.e.RegisterVolume(h.ctx, again)
	h.faults.Clear(csi.RPCNodeExpandVolume)
	if regErr == nil {
		t.Fatalf("premise: the registration whose NodeExpandVolume failed succeeded")
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 4*mib {
		t.Fatalf("premise: the storage grown to 4MiB with the node step owed; recorded %d, owed %d (registration: %v)",
			v.CapacityBytes, v.NodeExpansionOwed, regErr)
	}

	if v := h.volumeInfo("db"); !slices.Contains(v.Capabilities, capab(spec.MultiNodeReaderOnly)) ||
		v.MountOptions == nil || !slices.Contains(v.MountOptions.MountFlags, "noatime") {
		t.Errorf("the registration whose node step failed, the storage grown, recorded neither its capability nor its mount flags: %+v, %+v (error: %v)",
			v.Capabilities, v.MountOptions, regErr)
	}
	if !strings.Contains(regErr.Error(), "the registration is recorded") {
		t.Errorf("the error does not say the registration is recorded: %v", regErr)
	}
	followed := followRegistrationAdvice(t, h, regErr, again)
	v := h.volumeInfo("db")
	if v.NodeExpansionOwed != 0 {
		t.Errorf("after the advice (%s) the node expansion is still owed: %d", strings.Join(followed, ", then "), v.NodeExpansionOwed)
	}
	hasCap := slices.Contains(v.Capabilities, capab(spec.MultiNodeReaderOnly))
	hasFlags := v.MountOptions != nil && slices.Contains(v.MountOptions.MountFlags, "noatime")
	if !hasCap || !hasFlags {
		t.Errorf("after following the registration's advice (%s), each step succeeding, volume db is recorded without the registration's changes "+
			"(capability multi-node-reader-only recorded: %v; mount flag noatime recorded: %v): the registration was dropped, and its error said only to finish the node expansion: %v",
			strings.Join(followed, ", then "), hasCap, hasFlags, regErr)
	}
}

// TestNodeExpandAnswerAboveTheControllersIsNotTakenAsTheStoragesSize: a plugin whose controller
// expands (controller and node EXPAND_VOLUME) grows volume v to 4MiB: ControllerExpandVolume
// answers 4MiB with node_expansion_required, and the node's NodeExpandVolume answers OK with
// 8MiB, a size the storage never had (a node that lies, or reports another unit). nodeExpanded
// records any node answer above the recorded size as the volume's capacity, a rule meant for a
// plugin that expands only on the node, whose node says what the storage now is; here the
// controller had said what it is. The record says 8MiB while the plugin lists the storage at
// 4MiB, and `volume expand v --size 6MiB` is then refused as a shrink ("volumes cannot shrink:
// "v" is 8MiB, 6MiB asked", exit 2): the storage can no longer be grown to 6MiB, and nothing
// says the record is past what the plugin has.
//
// Correct behaviour: a node answer above the controller's is not recorded as the storage's size
// where the controller expands (the controller's answer stands; the node's is said in the
// event at most), so the later expand to 6MiB is sent and grows the storage. Found by helper
// review75.
func TestNodeExpandAnswerAboveTheControllersIsNotTakenAsTheStoragesSize(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.mem.AnswerNodeExpandWith(8 * mib)
	first, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	h.mem.AnswerNodeExpandWith(0)
	if err != nil {
		t.Fatalf("premise: expand to 4MiB, the node answering 8MiB: %v", err)
	}
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes != 4*mib {
		t.Fatalf("premise: the storage is %d after the controller's expansion, want 4MiB", mv.CapacityBytes)
	}
	_, err = h.e.ExpandVolume(h.ctx, "v", 6*mib, 0)
	mv, _ := h.mem.Volume(ext)
	if err != nil || mv.CapacityBytes < 6*mib {
		t.Errorf("the controller grew the storage to 4MiB and the node answered 8MiB; volctl recorded %d bytes (after the first expand), "+
			"and `volume expand v --size 6MiB` then: %v; the storage is %d bytes: want the expand sent and the storage grown to 6MiB",
			first.CapacityBytes, err, mv.CapacityBytes)
	}
}

// TestExpandLimitBelowTheRecordedCapacityMinIsRefused: volume db, created at 2MiB, has a plugin
// that cannot expand (no EXPAND_VOLUME), so a registration again with capacity_min 8MiB records
// that request beside the 2MiB the storage has ("just gets the larger request recorded"). `volume expand db --size
// 2MiB --limit 3MiB` (its size, a new limit) takes the size == current branch, which records
// --limit as capacity_max with no check against the recorded capacity_min: the record holds a
// requested range of 8MiB to 3MiB, which no spec may hold and which a registration refuses to
// write (TestRegisterAgainWithACapacityMaxBelowTheRecordedCapacityMin), and the command says
// "its capacity_max is now 3MiB", exit 0.
//
// Correct behaviour: a --limit below the recorded capacity_min is refused (nothing written),
// as the registration's capacity_max below it is. Found by helper review75.
func TestExpandLimitBelowTheRecordedCapacityMinIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = false, false })
	sv := volume("db")
	sv.CapacityMin = 2 * mib
	created := h.create(sv)
	re := sv
	re.ExternalID = created.ExternalID
	re.CapacityMin = 8 * mib
	if _, err := h.e.RegisterVolume(h.ctx, re); err != nil {
		t.Fatalf("register again with capacity_min 8MiB: %v", err)
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 2*mib || v.RequestedMin != 8*mib {
		t.Fatalf("premise: recorded at 2MiB with capacity_min 8MiB; got %d, %d", v.CapacityBytes, v.RequestedMin)
	}
	_, err := h.e.ExpandVolume(h.ctx, "db", 2*mib, 3*mib)
	if v := h.volumeInfo("db"); v.RequestedMax != 0 && v.RequestedMax < v.RequestedMin {
		t.Errorf("`volume expand db --size 2MiB --limit 3MiB` (err %v) left the record with capacity_min %s above capacity_max %s; "+
			"want the limit below the recorded capacity_min refused, nothing written", err, spec.FormatSize(v.RequestedMin), spec.FormatSize(v.RequestedMax))
	}
}
