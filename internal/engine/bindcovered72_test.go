package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestReleaseOfABindCoveredByAnotherMountIsRefused: a group's volume_mount bound, then covered by
// someone else's mount at the same destination (an admin's tmpfs, a disk): unbind took the top
// mount for "something else" (boundElsewhere) and skipped the destination, movedBinds looks at
// no path a destination names, and the release succeeded, the claim freed, the volume still
// bound below the cover, writable, another alloc's single-node-writer claim admitted beside it.
// The design has no release end with the claim's bind left (movedBinds), nor with a staging's
// own mount below a cover (TestReleaseOverACoveredStagingLeavesTheCover). It is refused, naming
// the umount; followed, reconcile finishes the release. Real mounts, as root. Found by helper
// review72 (docs).
func TestReleaseOfABindCoveredByAnotherMountIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dest := coveredBind(t, h, "covered")

	_, err := h.e.Release(h.ctx, "data", "a")
	if err == nil {
		// Released: nothing of the volume may be left below the other mount.
		if uerr := unix.Unmount(dest, 0); uerr != nil {
			t.Fatalf("unmount the cover: %v", uerr)
		}
		if hostpathtest.Mounted(t, dest) {
			b, _ := os.ReadFile(filepath.Join(dest, "volume.txt"))
			t.Fatalf("release of claim \"data\" for alloc \"a\" succeeded, the claim freed, but the volume is still bound at %s under the other mount "+
				"(volume.txt reads %q once the cover is gone): the volume stays readable and writable there with no claim", dest, b)
		}
		return
	}
	// Refused, naming the cover, the other mount left in place; the way out it names, followed.
	if !strings.Contains(err.Error(), "umount "+dest) {
		t.Fatalf("release refused: %v; want it to name the umount of what covers the bind", err)
	}
	if b, rerr := os.ReadFile(filepath.Join(dest, "mine")); rerr != nil || string(b) != "not the volume" {
		t.Fatalf("the other mount at %s after the refused release: %q, %v; want it left in place", dest, b, rerr)
	}
	if uerr := unix.Unmount(dest, 0); uerr != nil {
		t.Fatal(uerr)
	}
	if rep, rerr := h.e.Reconcile(h.ctx); rerr != nil {
		t.Fatalf("reconcile once the cover was unmounted: %+v %v", rep, rerr)
	}
	if v, verr := h.e.Volume(h.ctx, "data"); verr != nil || len(v.Claims) != 0 {
		t.Fatalf("claims of data after reconcile finished the release: %+v, %v", v.Claims, verr)
	}
	if hostpathtest.Mounted(t, dest) {
		t.Fatalf("the volume is still bound at %s after its release was finished", dest)
	}
}

// coveredBind claims "data" for alloc "a" with a volume_mount at a destination, writes a file
// through it and mounts someone else's directory over it: the claim's bind is below the cover.
func coveredBind(t *testing.T, h *hostpathEngine, name string) string {
	t.Helper()
	dest := filepath.Join(hostpathtest.MountDir(t), name)
	t.Cleanup(func() {
		for i := 0; i < 6 && hostpathtest.Mounted(t, dest); i++ {
			_ = unix.Unmount(dest, unix.MNT_DETACH)
		}
	})
	if _, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "volume.txt"), []byte("the volume's data"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreignMount(t, dest)
	return dest
}

// TestForcedDetachOfACoveredBindLeavesNoBindWithoutAClaim: the release of a claim whose bind is
// covered by another mount is refused, its error advising `volctl volume detach --force` "if the
// plugin is gone"; the forced detach met the same refusal in unbind, took it for a warning and
// freed the claim, the volume bound below the cover with no claim naming it, which the design
// refuses for a bind with mounts below it (mountedBelow). It stops there too; followed (the
// cover unmounted, the detach run again), nothing is left bound. Found by helper review72 (own5).
func TestForcedDetachOfACoveredBindLeavesNoBindWithoutAClaim(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dest := coveredBind(t, h, "covered")

	_, rerr := h.e.Release(h.ctx, "data", "a")
	t.Logf("release: %v", rerr)
	res, err := h.e.Detach(h.ctx, "data", true)
	t.Logf("forced detach of data: %+v, %v", res, err)
	live := liveClaimsOfData(t, h)
	if err := unix.Unmount(dest, 0); err != nil { // the cover, as the release's error advised
		t.Fatalf("unmount the cover: %v", err)
	}
	if hostpathtest.Mounted(t, dest) && len(live) == 0 {
		b, _ := os.ReadFile(filepath.Join(dest, "volume.txt"))
		t.Fatalf("forced detach of data freed its claim (err %v, warnings %q), but the volume is still bound at %s below the cover "+
			"(volume.txt reads %q once the cover is gone): no claim names the bind, nothing volctl runs unbinds it", err, res.Warnings, dest, b)
	}
	// The cover gone (above), the forced detach run again, as its refusal says, frees the claim
	// and leaves nothing bound.
	if _, err := h.e.Detach(h.ctx, "data", true); err != nil {
		t.Fatalf("forced detach once the cover was unmounted: %v", err)
	}
	if live := liveClaimsOfData(t, h); len(live) != 0 || hostpathtest.Mounted(t, dest) {
		t.Fatalf("after the forced detach run again: claims %+v, %s mounted %v; want none, nothing", live, dest, hostpathtest.Mounted(t, dest))
	}
}

// TestReleaseOfACoveredBindWithItsTargetUnmountedLeavesTheCover: the claim's bind covered by
// someone else's mount, and the claim's target unmounted since (a plugin restarted, an admin):
// boundElsewhere proves nothing without the target mounted, the cover check was not asked, and
// the release unmounted the cover, someone else's mount, as the claim's bind, freeing the claim
// with the volume bound below. The claim's record of its bind (its mount ID among the mounts at
// the destination) finds it covered; followed (the cover unmounted, reconcile), nothing is left
// bound. Found by helper review72 (own5).
func TestReleaseOfACoveredBindWithItsTargetUnmountedLeavesTheCover(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dest := coveredBind(t, h, "coveredt")
	live := liveClaimsOfData(t, h)
	if len(live) != 1 {
		t.Fatalf("claims: %+v", live)
	}
	target := live[0].TargetPath
	if err := unix.Unmount(target, 0); err != nil {
		t.Fatalf("unmount the target %s: %v", target, err)
	}
	_, err := h.e.Release(h.ctx, "data", "a")
	t.Logf("release: %v", err)
	b, rerr := os.ReadFile(filepath.Join(dest, "mine"))
	coverLeft := rerr == nil && string(b) == "not the volume"
	freed := len(liveClaimsOfData(t, h)) == 0
	var below string
	if !coverLeft && hostpathtest.Mounted(t, dest) {
		v, _ := os.ReadFile(filepath.Join(dest, "volume.txt"))
		below = string(v)
	}
	if !coverLeft {
		t.Errorf("release (err %v) unmounted the other mount at %s (mine: %q, %v), someone else's, taking it for the claim's bind; claim freed %v, %s now shows volume.txt %q",
			err, dest, b, rerr, freed, dest, below)
	}
	if freed && below != "" {
		t.Errorf("claim freed with the volume still bound at %s", dest)
	}
	if !coverLeft || freed {
		return
	}
	// Followed: the cover unmounted, reconcile finishes the release, nothing left bound.
	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the cover was unmounted: %+v %v", rep, err)
	}
	if live := liveClaimsOfData(t, h); len(live) != 0 || hostpathtest.Mounted(t, dest) {
		t.Fatalf("after reconcile: claims %+v, %s mounted %v; want none, nothing", live, dest, hostpathtest.Mounted(t, dest))
	}
}
