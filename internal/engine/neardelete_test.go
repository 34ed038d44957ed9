package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// Volume b registered on "DATA-1" (register is not held to the near-spelling rule) while
// volume a records "data-1", through a plugin that folds IDs: DeleteVolume("DATA-1") is a's
// storage to it. Neither `volume delete b` nor reconcile finishing a delete of b begun before
// sends it; the conflict names a, both spellings (escaped), `volume deregister b`, and how to
// delete b's storage if the plugin is case-sensitive; b is kept, ready. Deregister then works.
func TestDeleteOfANearSpellingOfAnotherVolumesStorageIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	h.mem.AddVolume(csi.Volume{ID: "data-1", CapacityBytes: 1 << 20})
	h.mem.AnswerCreateWith("data-1")
	h.create(volume("a"))
	h.mem.AnswerCreateWith("")
	// The register's ValidateVolumeCapabilities is answered by an exact "DATA-1" (MemPlugin's
	// FoldIDs folds deletes only), dropped after, as a folding plugin holds one volume.
	h.mem.AddVolume(csi.Volume{ID: "DATA-1", CapacityBytes: 1 << 20})
	if _, err := h.e.RegisterVolume(h.ctx, registered("b", "DATA-1")); err != nil {
		t.Fatalf("register of b on DATA-1 (not held to the near rule): %v", err)
	}
	h.mem.DropVolume("DATA-1")

	err := h.e.DeleteVolume(h.ctx, "b")
	t.Logf("delete b: %v", err)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("delete of b, external ID %q beside a's %q: %v; want a conflict", "DATA-1", "data-1", err)
	}
	for _, want := range []string{`volume "a"`, `"data-1"`, `"DATA-1"`, "`volctl volume deregister b`", "storage provider's tools", "(the volume is kept, ready)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refused delete does not say %s: %v", want, err)
		}
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s) for b, whose ID the plugin takes for a's", n)
	}
	if _, ok := h.mem.Volume("data-1"); !ok {
		t.Fatalf("a's storage %q was deleted by `volume delete b`", "data-1")
	}
	if v := h.volumeInfo("b"); v.State != "ready" {
		t.Errorf("b is %s after the refused delete, want ready", v.State)
	}

	// A delete of b begun before (marked deleting) is not finished by reconcile either.
	h.reconcileAsDeleting("b")
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("reconcile sent DeleteVolume %d time(s) finishing b's delete", n)
	}
	if v := h.volumeInfo("b"); v.State != "ready" {
		t.Errorf("b is %s after reconcile, want ready", v.State)
	}

	// The way out the conflict names works, and leaves a's storage.
	if _, err := h.e.DeregisterVolume(h.ctx, "b", false); err != nil {
		t.Fatalf("deregister b, the refusal's way out: %v", err)
	}
	if _, ok := h.mem.Volume("data-1"); !ok {
		t.Errorf("a's storage was deleted by deregister b")
	}
}
