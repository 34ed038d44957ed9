package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestClaimAgainOfAHeldClaimWhoseTargetIsCoveredIsAConflict: a published claim (no
// volume_mounts) has a tmpfs mounted over its target since. Reconcile reports it as a
// coveredTarget, whose own doc says "a claim again by the alloc is a conflict"; but the alloc's
// claim again takes the held path (claimStored: claimWritable, then bindHeld, which reaches
// settleLocked and targetCovered only when the claim has volume_mounts), and hands the target
// back, exit 0, as the alloc's volume: the alloc then reads and writes the tmpfs, and what it
// writes is lost with it. A claim again of a held claim whose target no longer shows what
// NodePublishVolume mounted there must be refused as a conflict naming the target and its
// umount, as reconcile reports it, whether or not the claim has volume_mounts; once the cover
// is unmounted as advised, the claim again hands the target back. Found by helper review75.
func TestClaimAgainOfAHeldClaimWhoseTargetIsCoveredIsAConflict(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	// Reconcile says so (the precondition: the cover is one volctl tells).
	if rep, err := h.e.Reconcile(h.ctx); err == nil && len(rep.Problems) == 0 {
		t.Fatalf("reconcile = %+v: nothing said of the covered target %s", rep, cl.TargetPath)
	}
	again, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		t.Fatalf("claim again by alloc \"a\" = %+v, nil: handed its target %s, which shows a tmpfs mounted over the volume; "+
			"want a conflict naming the target and its umount", again, cl.TargetPath)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), cl.TargetPath) || !strings.Contains(err.Error(), "umount") {
		t.Errorf("claim again = %v; want a conflict naming the covered target %s and its umount", err, cl.TargetPath)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() {
		t.Fatalf("claims after the claim again = %+v; want the claim held as it was", live)
	}
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("umount the tmpfs, as advised: %v", err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatalf("claim again once the cover is unmounted: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(cl.TargetPath, "volume-data")); err != nil || string(b) != "the volume's" {
		t.Fatalf("the target after the claim again: %q, %v; want the volume's data", b, err)
	}
}
