package engine

import (
	"strings"

	"github.com/volctl/volctl/internal/csi"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyExpansionRefusedForGoodPutsItsCapacityMinBack: a node-only plugin (node
// EXPAND_VOLUME, no controller EXPAND_VOLUME, 2MiB at most) is asked `volume expand v --size
// 4MiB`; every NodeExpandVolume answers OUT_OF_RANGE and nothing grows. nodeOnlyRefused puts
// the capacity, the limit and the node debt back, but not the capacity_min the expand raised to
// 4MiB: `volume status` shows "Capacity Requested 4MiB" of a 1MiB volume, an export hands Nomad
// capacity_min 4MiB, the volume's own spec (capacity_min 1MiB) registered again is refused as a
// shrink, and the way out, `volume expand v --size 2MiB --limit 2MiB`, is refused "the limit 2MiB
// is below its capacity_min 4MiB: give a --limit of at least 4MiB", a size the plugin refuses.
//
// Correct behaviour: the record put back as it was before the refused expand, capacity_min
// included, so an expand to a size the plugin takes, with a limit at that size, is sent and
// grows the storage.
// Found by helper review82 (ownb).
func TestNodeOnlyExpansionRefusedForGoodPutsItsCapacityMinBack(t *testing.T) {
	t.Parallel()
	h, ext := nodeOnlyCapped(t)
	before := h.volumeInfo("v")

	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatalf("premise: the node-only expand to 4MiB, above the plugin's 2MiB maximum, succeeded")
	}
	if len(h.nodeExpands()) == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent")
	}
	after := h.volumeInfo("v")
	if after.CapacityBytes != before.CapacityBytes {
		t.Fatalf("premise: the capacity was not put back (%s, was %s)", spec.FormatSize(after.CapacityBytes), spec.FormatSize(before.CapacityBytes))
	}
	if after.RequestedMin != before.RequestedMin {
		t.Errorf("after the plugin refused the node-only expansion for good, nothing grown: volume v's capacity_min is %s (was %s): a request the plugin refused kept as the volume's",
			spec.FormatSize(after.RequestedMin), spec.FormatSize(before.RequestedMin))
	}

	// The way out: a size the plugin takes, with a limit at that size.
	_, err := h.e.ExpandVolume(h.ctx, "v", 2*mib, 2*mib)
	pv, _ := h.mem.Volume(ext)
	if err != nil || pv.CapacityBytes < 2*mib {
		t.Errorf("then `volume expand v --size 2MiB --limit 2MiB`, a size the plugin takes: %v; the storage is %s: want it sent and grown to 2MiB",
			err, spec.FormatSize(pv.CapacityBytes))
	}
}

// TestNodeOnlyExpansionRefusedForGoodOfARegisteredVolumeIsNotRecordedAtTheSizeRefused: the
// same refusal (every NodeExpandVolume OUT_OF_RANGE, nothing grown) of a registered volume,
// whose size is not recorded (registration learns none). nodeOnlyRefused puts its capacity
// back to "not known" but keeps the capacity_min raised to the refused 4MiB, and a volume of
// unknown size is taken to be its capacity_min (currentSize): it is recorded at 4MiB all the
// same, and `volume expand db --size 2MiB`, a size the plugin takes, is refused "volumes cannot
// shrink: db is 4MiB" — the very symptom the put-back was made for, left for registered volumes.
//
// Correct behaviour: the record as it was before the refused expand, so the 2MiB expand is
// sent and grows the storage.
// Found by helper review82 (ownb).
func TestNodeOnlyExpansionRefusedForGoodOfARegisteredVolumeIsNotRecordedAtTheSizeRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		c.MaxVolumeSize = 2 * mib
	})
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", mib)); err != nil {
		t.Fatalf("premise: register: %v", err)
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 0 {
		t.Fatalf("premise: the registered volume's size is recorded (%s)", spec.FormatSize(v.CapacityBytes))
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})

	if _, err := h.e.ExpandVolume(h.ctx, "db", 4*mib, 0); err == nil {
		t.Fatalf("premise: the node-only expand to 4MiB, above the plugin's 2MiB maximum, succeeded")
	}
	if len(h.nodeExpands()) == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent")
	}

	_, err := h.e.ExpandVolume(h.ctx, "db", 2*mib, 0)
	pv, _ := h.mem.Volume("ext-db")
	if err != nil || pv.CapacityBytes < 2*mib {
		shrink := err != nil && strings.Contains(err.Error(), "cannot shrink")
		t.Errorf("after the plugin refused 4MiB for good, `volume expand db --size 2MiB`, a size it takes: %v (refused as a shrink: %v); the storage is %s: want it sent and grown to 2MiB",
			err, shrink, spec.FormatSize(pv.CapacityBytes))
	}
}
