package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// An expand to the volume's current size with --limit records the limit as its capacity_max
// (setRequestedMax). With an expansion to a larger size pending (its ControllerExpandVolume sent
// and the answer not read), a limit below that size is taken, exit 0, and reconcile then sends
// the pending expansion with its own, older limit: the storage grows past the capacity_max the
// user had just set, and the record holds a size above its capacity_max. A registration
// lowering capacity_max below a pending expansion is refused for exactly this (pendingLimit,
// TestRegisterLoweringCapacityMaxUnderAPendingExpansion); so is the expand now, a conflict
// naming the pending size and reconcile, which then finishes it. Before, taken, then broken.
// Found by helper review62.
func TestExpandLimitBelowAPendingExpansionIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v")) // 1MiB, no capacity_max
	h.faults.FailNext(csi.RPCControllerExpandVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand whose every attempt was unavailable succeeded")
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("expansion pending = %s, want 4MiB", spec.FormatSize(v.ExpansionPending))
	}
	_, err := h.e.ExpandVolume(h.ctx, "v", 1*mib, 2*mib)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "expansion to 4MiB pending") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("expand to the current size with --limit 2MiB under a pending 4MiB expansion = %v; want a conflict naming the pending 4MiB and reconcile", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	v := h.volumeInfo("v")
	pv, _ := h.mem.Volume(v.ExternalID)
	if pv.CapacityBytes != 4*mib || v.CapacityBytes != 4*mib || v.RequestedMax != 0 {
		t.Errorf("after the refusal and reconcile: storage %s, recorded %s, capacity_max %s; want the pending 4MiB finished and no limit set",
			spec.FormatSize(pv.CapacityBytes), spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.RequestedMax))
	}
}

// An expand interrupted (Ctrl-C: its context cancelled) once ControllerExpandVolume answered and
// before the answer is recorded leaves the storage grown and the expansion pending. Every other
// interruption of the expand says so and names what finishes it (the same expand again, or
// `volctl reconcile`: TestInterruptAtEachStepLeavesItResumable's rule for acting commands); the
// commit of the answer ran on the cancelled context, failed, and the expand returned the bare
// cancellation: the user was not told the plugin grew the volume nor what to run. Now the
// answer is recorded whatever the context (WithoutCancel, as the node step's record is), and
// what the interrupt cut short after it says what finishes it. Found by helper review62.
func TestExpandInterruptedAfterTheAnswerIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.e.failpointHook = func(name string) {
		if name == "rpc:ControllerExpandVolume" {
			cancel() // SIGINT, right after the answer arrived
		}
	}
	_, err := h.e.ExpandVolume(ctx, "v", 4*mib, 0)
	h.e.failpointHook = nil
	v := h.volumeInfo("v")
	pv, _ := h.mem.Volume(v.ExternalID)
	if pv.CapacityBytes != 4*mib || v.CapacityBytes != 4*mib || v.ExpansionPending != 0 {
		t.Errorf("after the interrupt: storage %s, recorded %s, pending %s; want the answer (4MiB) recorded",
			spec.FormatSize(pv.CapacityBytes), spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.ExpansionPending))
	}
	if err != nil && !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("expand interrupted after ControllerExpandVolume answered said only:\n  %v\nwant what finishes it", err)
	}
}

// The same, one step on: interrupted once the new size and the node expansion owed are
// committed (failpoint expand:node-owed), before NodeExpandVolume is sent. expandOnNode's read of
// the claims runs on the cancelled context, and the expand fails with the store's "nothing
// written: context canceled": the volume is recorded grown, its node expansion owed, and the
// error named neither the debt nor what pays it (the same expand, or reconcile), as a failed
// NodeExpandVolume's error does; now it does. Found by helper review62.
func TestExpandInterruptedBeforeTheNodeStepSaysItIsOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.e.failpointHook = func(name string) {
		if name == "expand:node-owed" {
			cancel()
		}
	}
	_, err := h.e.ExpandVolume(ctx, "v", 4*mib, 0)
	h.e.failpointHook = nil
	v := h.volumeInfo("v")
	if err == nil || v.NodeExpansionOwed != 4*mib {
		t.Fatalf("interrupt before the node step: err %v, owed %s; want an error, 4MiB owed", err, spec.FormatSize(v.NodeExpansionOwed))
	}
	if !strings.Contains(err.Error(), "node expansion (NodeExpandVolume) owed") || !strings.Contains(err.Error(), "volctl reconcile") || !strings.Contains(err.Error(), "volctl volume expand v") {
		t.Errorf("expand interrupted with its node expansion to %s owed (recorded %s) said only:\n  %v\nwant it to say the node expansion is owed and what sends it",
			spec.FormatSize(v.NodeExpansionOwed), spec.FormatSize(v.CapacityBytes), err)
	}
}
