package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// Register is not held to the near-spelling rule (an ID typed by the user). Through a plugin
// that finds volumes by IDs spelled otherwise, volume b registered on "DATA-1" while volume a
// records "data-1" is a's storage; `volume delete b` then sends DeleteVolume("DATA-1"), which
// the plugin takes for a's: the harm the change names ("a later `volume delete` of the volume
// recorded under it would delete that volume's data") is still reachable.
func TestReviewDeleteOfARegisteredNearSpellingKeepsTheOthersData(t *testing.T) {
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	h.mem.AddVolume(csi.Volume{ID: "data-1", CapacityBytes: 1 << 20})
	h.mem.AnswerCreateWith("data-1")
	h.create(volume("a"))
	h.mem.AnswerCreateWith("")
	// MemPlugin's FoldIDs folds Delete but not ValidateVolumeCapabilities: the register's
	// check is answered by an exact "DATA-1", dropped after, as a folding plugin answers it.
	h.mem.AddVolume(csi.Volume{ID: "DATA-1", CapacityBytes: 1 << 20})
	if _, err := h.e.RegisterVolume(h.ctx, registered("b", "DATA-1")); err != nil {
		t.Skipf("register of b on DATA-1 refused: %v", err)
	}
	h.mem.DropVolume("DATA-1")
	derr := h.e.DeleteVolume(h.ctx, "b")
	if _, ok := h.mem.Volume("data-1"); !ok {
		t.Errorf("volume a's storage %q was deleted by `volume delete b` (external ID %q; delete: %v)", "data-1", "DATA-1", derr)
	}
}
