package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestRegisterAgainAboveTheRecordedCapacityMaxKeepsTheLimit: a volume registered with
// capacity_max 4MiB, registered again with capacity_min 8MiB and no capacity_max (mergeRegistered
// keeps the recorded capacity_max), was grown by a ControllerExpandVolume sent with no
// limit_bytes to 8MiB, past its capacity_max, and the record then held capacity_min 8MiB above
// capacity_max 4MiB. The docs say re-registering with a larger capacity_min "goes the same way"
// as an expand, and that "An expand given no limit ... is bounded by the volume's capacity_max as
// the engine reads it under the volume's lock, a size above it refused as invalid (exit 2),
// nothing sent (`recordedLimit`)"; a record whose minimum is above its maximum is one the docs
// call a defect ("the record held a requested range whose minimum was above its maximum"). Found by helper review73.
func TestRegisterAgainAboveTheRecordedCapacityMaxKeepsTheLimit(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 * mib})
	sv := registered("v", "ext-1")
	sv.CapacityMin, sv.CapacityMax = 1*mib, 4*mib
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("register: %v", err)
	}
	again := registered("v", "ext-1")
	again.CapacityMin = 8 * mib // capacity_max left out: the recorded 4MiB stays
	_, err := h.e.RegisterVolume(h.ctx, again)
	v := h.volumeInfo("v")
	for _, req := range csitest.Requests[csi.ControllerExpandVolumeRequest](h.mem) {
		if req.CapacityMax == 0 || req.CapacityMax > 4*mib {
			t.Errorf("ControllerExpandVolume sent with required_bytes %d and limit_bytes %d for a volume whose capacity_max is 4MiB", req.CapacityMin, req.CapacityMax)
		}
	}
	if v.CapacityBytes > 4*mib {
		t.Errorf("volume grown to %d, past its recorded capacity_max 4MiB (register again: err %v)", v.CapacityBytes, err)
	}
	if v.RequestedMax != 0 && v.RequestedMin > v.RequestedMax {
		t.Errorf("the record holds capacity_min %d above capacity_max %d (register again: err %v)", v.RequestedMin, v.RequestedMax, err)
	}
	if err == nil {
		t.Fatalf("register again with capacity_min 8MiB above the recorded capacity_max 4MiB succeeded; want it refused (invalid or a conflict)")
	} else if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrConflict) {
		t.Errorf("register again: %v; want invalid or a conflict naming capacity_max", err)
	}
	// The refusal's way out: a capacity_max of at least 8MiB, registered again, grows it.
	if !strings.Contains(err.Error(), "give a capacity_max of at least 8MiB, then register it again") {
		t.Fatalf("register again: %v; want it to say what capacity_max to give", err)
	}
	again.CapacityMax = 8 * mib
	if _, err := h.e.RegisterVolume(h.ctx, again); err != nil {
		t.Fatalf("register again with capacity_max 8MiB, as advised: %v", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 8*mib || v.RequestedMax != 8*mib {
		t.Errorf("after the advised registration: %d, capacity_max %d; want 8MiB both", v.CapacityBytes, v.RequestedMax)
	}
}

// TestCreateAgainAboveTheRecordedCapacityMaxKeepsTheLimit: a volume created with capacity_max
// 4MiB, created again from a spec with capacity_min 8MiB and no capacity_max, was grown by a
// ControllerExpandVolume sent with no limit_bytes to 8MiB, past the capacity_max recorded, and the
// record then held capacity_min 8MiB above capacity_max 4MiB. The docs: "Re-creating a volume
// with a larger `capacity_min` goes the same way" as an expand, which given no limit "is bounded
// by the volume's capacity_max as the engine reads it under the volume's lock, a size above it
// refused as invalid (exit 2), nothing sent". Found by helper review73.
func TestCreateAgainAboveTheRecordedCapacityMaxKeepsTheLimit(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h := newHarness(t, nil)
	sv := volume("v")
	sv.CapacityMin, sv.CapacityMax = 1*mib, 4*mib
	h.create(sv)
	again := volume("v")
	again.CapacityMin = 8 * mib // capacity_max left out
	_, err := h.e.CreateVolume(h.ctx, again)
	v := h.volumeInfo("v")
	for _, req := range csitest.Requests[csi.ControllerExpandVolumeRequest](h.mem) {
		if req.CapacityMax == 0 || req.CapacityMax > 4*mib {
			t.Errorf("ControllerExpandVolume sent with required_bytes %d and limit_bytes %d for a volume whose capacity_max is 4MiB", req.CapacityMin, req.CapacityMax)
		}
	}
	if v.CapacityBytes > 4*mib {
		t.Errorf("volume grown to %d, past its recorded capacity_max 4MiB (create again: err %v)", v.CapacityBytes, err)
	}
	if v.RequestedMax != 0 && v.RequestedMin > v.RequestedMax {
		t.Errorf("the record holds capacity_min %d above capacity_max %d (create again: err %v)", v.RequestedMin, v.RequestedMax, err)
	}
	if err == nil {
		t.Fatalf("create again with capacity_min 8MiB above the recorded capacity_max 4MiB succeeded; want it refused (invalid or a conflict)")
	} else if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrConflict) {
		t.Errorf("create again: %v; want invalid or a conflict naming capacity_max", err)
	}
	if !strings.Contains(err.Error(), "give a capacity_max of at least 8MiB, then create it again") {
		t.Fatalf("create again: %v; want it to say what capacity_max to give", err)
	}
	again.CapacityMax = 8 * mib
	if _, err := h.e.CreateVolume(h.ctx, again); err != nil {
		t.Fatalf("create again with capacity_max 8MiB, as advised: %v", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 8*mib || v.RequestedMax != 8*mib {
		t.Errorf("after the advised create: %d, capacity_max %d; want 8MiB both", v.CapacityBytes, v.RequestedMax)
	}
}

// TestOwedNodeOnlyExpansionThroughAPluginNowControllerOnlyGrowsTheStorage: a node-only
// expansion (a plugin with node EXPAND_VOLUME alone) of a volume on no path here recorded the
// new size and its NodeExpandVolume owed, which is the whole expansion; the plugin came back
// from a restart declaring the controller's EXPAND_VOLUME and not the node's. The docs: "when
// such a debt comes due (a claim publishes the volume, `volume expand` again, reconcile) and the
// plugin now declares the controller's EXPAND_VOLUME, a ControllerExpandVolume to the size owed is
// sent first", and "The plugin's declaration when the work is sent rules". Neither the claim's
// publish, nor the expand to the size recorded, nor reconcile sent it: each stopped at the node's
// missing EXPAND_VOLUME (the publish silently), so the storage stayed at 1MiB for good while the
// volume was recorded at 4MiB, and every command advised a node capability this plugin, whose
// controller alone expands, does not need. Found by helper review73.
func TestOwedNodeOnlyExpansionThroughAPluginNowControllerOnlyGrowsTheStorage(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h, ext := owedNodeOnlyToFourMiB(t)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false })
	// Status says what sends it, now the controller's step alone: not a node capability.
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil { // records the plugin as it is now
		t.Fatal(err)
	}
	if w := h.volumeInfo("v").NodeExpansionWaits; !strings.Contains(w, "ControllerExpandVolume") || strings.Contains(w, "start the plugin with that capability") {
		t.Errorf("status of the debt through a plugin now controller-only says %q; want it naming the ControllerExpandVolume that pays it", w)
	}

	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	_, experr := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	rep, recerr := h.e.Reconcile(h.ctx)

	mv, _ := h.mem.Volume(ext)
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n == 0 || mv.CapacityBytes < 4*mib {
		t.Errorf("ControllerExpandVolume sent %d times; the storage is %d, the volume recorded at %d (expand: %v; reconcile: %v %+v); "+
			"want the controller, which now alone expands, sent the size owed", n, mv.CapacityBytes, h.volumeInfo("v").CapacityBytes, experr, recerr, rep.Problems)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || experr != nil || recerr != nil {
		t.Errorf("after the controller's step: owed %d (expand: %v; reconcile: %v); want nothing owed, no error: the node has no step of its own", v.NodeExpansionOwed, experr, recerr)
	}
}

// TestExpandPayingAnOwedExpansionByTheControllerAloneSaysSo: `volume expand` to the size a
// node-only expansion owes, through a plugin now controller-only, sends ControllerExpandVolume,
// clears the debt, and says that is the whole expansion (ExpansionNote), not "expanded on the
// node" of a NodeExpandVolume never sent.
func TestExpandPayingAnOwedExpansionByTheControllerAloneSaysSo(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	h, _ := owedNodeOnlyToFourMiB(t)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, false })
	info, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err != nil {
		t.Fatalf("expand again through the plugin now controller-only: %v", err)
	}
	if info.NodeExpansionOwed != 0 || !strings.Contains(info.ExpansionNote, "no NodeExpandVolume is owed") {
		t.Errorf("expand again: owed %d, note %q; want nothing owed, the note saying the controller's step was the whole expansion", info.NodeExpansionOwed, info.ExpansionNote)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 0 {
		t.Errorf("NodeExpandVolume sent %d times to a node without EXPAND_VOLUME", n)
	}
}

// owedNodeOnlyToFourMiB is a harness whose plugin expands through its node service alone, volume "v"
// expanded to 4MiB while on no path here: its NodeExpandVolume owed, the whole expansion. It
// returns the harness and the volume's storage ID; the tests then restart the plugin
// controller-only (controllerAloneOwes).
func owedNodeOnlyToFourMiB(t *testing.T) (*harness, string) {
	t.Helper()
	const mib = 1 << 20
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib || v.CapacityBytes != 4*mib {
		t.Fatalf("setup: recorded %d, owed %d after a node-only expand of a volume on no path; want 4MiB both", v.CapacityBytes, v.NodeExpansionOwed)
	}
	return h, ext
}
