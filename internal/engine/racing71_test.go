package engine

import (
	"context"
	"testing"
)

// TestRegisterOfAnotherVolumesStorageWhileItIsDeletedRecordsNothing: volume a records storage
// vol-1. A `volume register b` naming vol-1 as its external ID is paused once the plugin
// validated it (failpoint register:validated: nothing recorded yet; it holds b's lock, not a's),
// and another volctl's `volume delete a` runs meanwhile: it takes a's lock and deletes vol-1 at
// the plugin. Let go, the register records b on vol-1, which the plugin no longer has, and says
// it registered it. Run at any other moment it is refused: before the delete as a's storage
// ("already registered as volume a"), after it by ValidateVolumeCapabilities' NotFound. Every
// claim of b then failed NotFound at the plugin. Found by helper review71.
func TestRegisterOfAnotherVolumesStorageWhileItIsDeletedRecordsNothing(t *testing.T) {
	t.Parallel()
	h, ext, out := registerOfAsStorageWhile(t, func(ctx context.Context, other *Engine) error { return other.DeleteVolume(ctx, "a") })
	t.Logf("register b: %v; delete a (waited %v): %v", out.aErr, out.bWaited, out.bErr)
	if out.bErr != nil {
		t.Fatalf("the delete of a: %v", out.bErr)
	}
	if len(h.mem.Volumes()) != 0 {
		t.Fatalf("premise: the delete of a left the plugin holding %+v", h.mem.Volumes())
	}
	if out.aErr == nil {
		t.Errorf("volume b registered (no error) on storage %q, which another volctl's delete of volume a deleted while the register was on its way: the plugin holds no volume", ext)
	}
	if !h.volumeGone("b") {
		_, cerr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "x-0"})
		t.Errorf("volume b is recorded on storage %q, which the plugin no longer has; a claim of b: %v", ext, cerr)
	}
}

// TestRegisterOfAnotherVolumesStorageWhileItIsDeregisteredRecordsIt: the same race with a
// deregister of a, which leaves the storage: the register, sent round again once a no longer
// records the storage, finds the plugin still has it and records b.
func TestRegisterOfAnotherVolumesStorageWhileItIsDeregisteredRecordsIt(t *testing.T) {
	t.Parallel()
	h, ext, out := registerOfAsStorageWhile(t, func(ctx context.Context, other *Engine) error {
		_, err := other.DeregisterVolume(ctx, "a", false)
		return err
	})
	if out.bErr != nil || out.aErr != nil {
		t.Fatalf("deregister a: %v; register b on its storage meanwhile: %v; want both done", out.bErr, out.aErr)
	}
	if got := h.externalID("b"); got != ext {
		t.Fatalf("volume b records external ID %q; want %q", got, ext)
	}
}

// registerOfAsStorageWhile creates volume a, then registers volume b on a's storage (ext, its
// external ID), paused once the plugin validated it (register:validated) while another engine
// runs meanwhile.
func registerOfAsStorageWhile(t *testing.T, meanwhile func(ctx context.Context, other *Engine) error) (h *harness, ext string, out pairOutcome) {
	t.Helper()
	h = newHarness(t, nil)
	h.create(volume("a"))
	ext = h.externalID("a")
	out = h.pausedPair("register:validated",
		func(ctx context.Context) error { _, err := h.e.RegisterVolume(ctx, registered("b", ext)); return err },
		meanwhile)
	return h, ext, out
}
