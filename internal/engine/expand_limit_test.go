package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestExpandToTheCurrentSizeSetsTheNewLimit: `volume expand --help` promises "--limit sets a new
// capacity_max". An expand asking for the volume's current size with --limit answered "already
// 2.0 GiB", exit 0, and dropped the limit: a later expand past the old capacity_max was still
// refused ("pass --limit to raise it"). The new limit is recorded (no RPC: it bounds later
// requests); a limit below the size is still refused.
func TestExpandToTheCurrentSizeSetsTheNewLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db")
	sv.CapacityMax = 8 << 20
	cur := h.create(sv).CapacityBytes
	v, err := h.e.ExpandVolume(h.ctx, "db", cur, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if v.RequestedMax != 64<<20 || v.CapacityBytes != cur {
		t.Fatalf("after expand to the current size with --limit 64MiB: capacity_max %s, capacity %s; want the limit recorded and the size as it was",
			spec.FormatSize(v.RequestedMax), spec.FormatSize(v.CapacityBytes))
	}
	if n := h.faults.Calls("ControllerExpandVolume"); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times for the current size", n)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "db", cur, cur-1); err == nil {
		t.Fatal("a limit below the size was taken")
	}
	if v := h.volumeInfo("db"); v.RequestedMax != 64<<20 {
		t.Fatalf("capacity_max after a refused limit = %s", spec.FormatSize(v.RequestedMax))
	}
}
