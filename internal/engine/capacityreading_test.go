package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// specMinOf201GB is the capacity_min the parser reads from `capacity_min = "2.01GB"`.
func specMinOf201GB(t *testing.T) int64 {
	t.Helper()
	src := `id = "db"
type = "csi"
plugin_id = "mem"
capacity_min = "2.01GB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`
	v, diags := spec.ParseVolume("db.hcl", []byte(src), spec.VerbAny)
	if v == nil {
		t.Fatalf("parse: %v", diags)
	}
	return v.CapacityMin
}

// TestSameSpecCreatedAgainAfterAnUpgradeIsUnchanged: a volume created by the previous volctl
// from capacity_min = "2.01GB" has RequestedMin 2010000000 stored. `volctl volume create` of
// the very same file must still say "unchanged", not refuse a shrink.
func TestSameSpecCreatedAgainAfterAnUpgradeIsUnchanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	old := volume("db")
	old.CapacityMin = 2010000000 // what volctl read before round 31, and reads from "2.01GB"
	h.create(old)
	again := old
	again.CapacityMin = specMinOf201GB(t)
	if _, err := h.e.CreateVolume(h.ctx, again); err != nil {
		t.Fatalf("create again of the same spec file (capacity_min %d now, %d stored by the old volctl): %v", again.CapacityMin, old.CapacityMin, err)
	}
}

// TestSameSpecRegisteredAgainAfterAnUpgradeIsAccepted: the same for a registration.
func TestSameSpecRegisteredAgainAfterAnUpgradeIsAccepted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 2010000000})
	old := registered("v", "ext-1")
	old.CapacityMin = 2010000000
	if _, err := h.e.RegisterVolume(h.ctx, old); err != nil {
		t.Fatal(err)
	}
	again := old
	again.CapacityMin = specMinOf201GB(t)
	if _, err := h.e.RegisterVolume(h.ctx, again); err != nil {
		t.Fatalf("register again of the same spec file (capacity_min %d now, %d stored by the old volctl): %v", again.CapacityMin, old.CapacityMin, err)
	}
}
