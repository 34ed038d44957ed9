package engine

import (
	"errors"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// restoredOfUnknownSize is eightMiBSnapshot's harness (its plugin as cfg sets it) with volume
// "restored" restored from snapshot s1 (recorded at 8 MiB) with the given capacity_min, the
// plugin answering CreateVolume with capacity_bytes 0 (the CSI spec's "unknown": the field is
// optional) for the volume it made, which is at least the snapshot's 8 MiB.
func restoredOfUnknownSize(t *testing.T, cfg func(*csitest.MemConfig), capacityMin int64) *harness {
	t.Helper()
	h, s := eightMiBSnapshot(t, cfg)
	sv := volume("restored")
	sv.CapacityMin = capacityMin
	sv.SnapshotID = s.ID
	answerCreateVolumeAt(h, 0)
	if v := h.create(sv); v.CapacityBytes != 0 {
		t.Fatalf("restored volume recorded at %d bytes, want 0 (the plugin answered no size)", v.CapacityBytes)
	}
	pv, ok := h.mem.Volume(h.externalID("restored"))
	if !ok || pv.CapacityBytes < 8*mib {
		t.Fatalf("the plugin's restored volume: %+v (found %v), want at least the snapshot's 8MiB", pv, ok)
	}
	h.mem.ResetCalls()
	return h
}

// TestExpandOfARestoreOfUnknownSizeAsksItsSizeFirst: a volume restored from snapshot s1
// (recorded at 8 MiB) with capacity_min 1MiB, whose plugin answered CreateVolume without a size
// (0, unknown), is recorded with no size. `volume expand restored --size 4MiB` takes its size
// to be its capacity_min (currentSize falls back to RequestedMin), so the rule for a volume of
// no recorded size (learntSize: ask the plugin first, which lists it at 8 MiB) is skipped:
// ControllerExpandVolume is sent, the outcome is Expanded, the event says "expanded to 8MiB",
// and a NodeExpandVolume is recorded owed, of a volume the plugin grew by nothing (it was 8 MiB
// since its restore, as its snapshot's recorded size said). Correct: a volume whose capacity
// is not recorded is looked up first whatever its capacity_min (that, and the snapshot's size,
// are lower bounds, not its size): listed at 8 MiB, nothing is sent, the outcome is Measured,
// the size listed is recorded, and no node expansion is owed. Found by helper review75.
func TestExpandOfARestoreOfUnknownSizeAsksItsSizeFirst(t *testing.T) {
	t.Parallel()
	// Allocated in 8 MiB units: the restore with capacity_min 1MiB is made at the snapshot's
	// 8 MiB, as a plugin restoring a snapshot larger than required_bytes does.
	h := restoredOfUnknownSize(t, func(c *csitest.MemConfig) { c.Granularity = 8 * mib }, 1*mib)
	_, after, grew, err := h.e.ExpandVolumeFrom(h.ctx, "restored", 4*mib, 0)
	if err != nil {
		t.Fatalf("expand of the restored volume to 4MiB: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times to grow to 4MiB a volume the plugin lists at 8MiB (restored from an 8MiB snapshot); RPCs %v", n, h.rpcs())
	}
	if grew != Measured {
		t.Errorf("outcome %v, want Measured (%v): the volume was 8MiB since its restore, not expanded; events %q",
			grew, Measured, h.eventsOf("volume-expand", "restored", ""))
	}
	if after.CapacityBytes != 8*mib || after.NodeExpansionOwed != 0 {
		t.Errorf("after the expand: capacity %d, node expansion owed %d; want %d, none", after.CapacityBytes, after.NodeExpansionOwed, 8*mib)
	}
}

// TestExpandBelowTheSnapshotSizeOfARestoreOfUnknownSizeIsRefused: the same restore, with
// capacity_min 0 (the snapshot's size, the plugin's to choose), through a plugin that can say
// no volume's size (neither LIST_VOLUMES nor GET_VOLUME). volctl records snapshot s1 at 8 MiB,
// and the CSI spec has a volume restored from it be no smaller, so the volume is at least 8
// MiB; `volume expand restored --size 4MiB --limit 6MiB` asks it to be at most 6 MiB, which no
// volume of at least 8 MiB can be. volctl sends ControllerExpandVolume all the same, then fails
// blaming the plugin ("answered ... above the limit 6MiB asked: the storage is that size now"),
// though the plugin grew nothing, and records capacity_min 4MiB and capacity_max 6MiB under a
// capacity far above both. Correct: the snapshot's recorded size bounds the restore's unknown
// size from below, and the expand is refused as invalid (volumes cannot shrink), nothing sent
// and no limit recorded, as it is for a volume of unknown size its plugin lists above the
// limit (TestAVolumeOfUnknownSizeListedAboveTheLimitIsNotSaidToMeetIt). Found by helper
// review75.
func TestExpandBelowTheSnapshotSizeOfARestoreOfUnknownSizeIsRefused(t *testing.T) {
	t.Parallel()
	h := restoredOfUnknownSize(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false }, 0)
	_, _, _, err := h.e.ExpandVolumeFrom(h.ctx, "restored", 4*mib, 6*mib)
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times, to make at most 6MiB a volume restored from an 8MiB snapshot (expand: %v)", n, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("expand to 4MiB with --limit 6MiB of a volume restored from an 8MiB snapshot: %v; want it refused as invalid (volumes cannot shrink)", err)
	}
	if v := h.volumeInfo("restored"); v.RequestedMax != 0 && v.CapacityBytes > v.RequestedMax {
		t.Errorf("recorded capacity %d above the capacity_max %d the refused expand recorded", v.CapacityBytes, v.RequestedMax)
	}
	// Without the limit, 4MiB is had already (at least the snapshot's 8 MiB): nothing sent.
	_, after, grew, err := h.e.ExpandVolumeFrom(h.ctx, "restored", 4*mib, 0)
	if err != nil || grew != AtLeastSource || h.mem.CallCount(csi.RPCControllerExpandVolume) != 0 || after.RequestedMin != 4*mib {
		t.Errorf("expand to 4MiB of a volume restored from an 8MiB snapshot: %v, outcome %v, ControllerExpandVolume sent %d, capacity_min %d; "+
			"want AtLeastSource, nothing sent, 4MiB recorded as asked", err, grew, h.mem.CallCount(csi.RPCControllerExpandVolume), after.RequestedMin)
	}
}

// TestCloneOfAVolumeOwedANodeOnlyExpansionIsNotRefusedAsSmaller: through a plugin that expands
// only on the node (node EXPAND_VOLUME, not the controller's), `volume expand src --size 4MiB`
// of a volume on no path records src at 4 MiB with its NodeExpandVolume owed, which is the
// whole expansion: the storage is still 1 MiB (the plugin lists it so) until a claim publishes
// it. A clone of src (clone_id = "src", capacity_min 1MiB) is made by the plugin at 1 MiB, a
// faithful copy of its 1 MiB source, and volctl refuses it and deletes it again, saying it is
// "smaller than the 4MiB its source has ... which it cannot hold": sourceSize takes the
// source's recorded capacity, a size the storage does not have. (A snapshot of src taken then is
// 1 MiB, and a restore from it at 1 MiB is taken: the same data.) Correct: a source whose
// recorded size waits on a node-only expansion owed (NodeExpandMin set, the controller not
// having had it) is not sized by that record (its size before the debt, what the plugin lists,
// or none), and the clone is recorded. Found by helper review75.
func TestCloneOfAVolumeOwedANodeOnlyExpansionIsNotRefusedAsSmaller(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("src"))
	if _, err := h.e.ExpandVolume(h.ctx, "src", 4*mib, 0); err != nil {
		t.Fatalf("expand src: %v", err)
	}
	if v := h.volumeInfo("src"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 4*mib {
		t.Fatalf("src after its node-only expand: capacity %d, node expansion owed %d; want 4MiB, 4MiB", v.CapacityBytes, v.NodeExpansionOwed)
	}
	if pv, _ := h.mem.Volume(h.externalID("src")); pv.CapacityBytes != 1*mib {
		t.Fatalf("the plugin's src is %d bytes; want still 1MiB, its node-only expansion owed", pv.CapacityBytes)
	}
	sv := volume("clone")
	sv.CloneID = "src"
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err != nil {
		t.Fatalf("clone of src (1MiB on the plugin, recorded 4MiB with its node-only expansion owed), made at 1MiB: %v", err)
	}
	if v.State != "ready" {
		t.Errorf("clone recorded %s, want ready", v.State)
	}
}
