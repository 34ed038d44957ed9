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
	dest := filepath.Join(hostpathtest.MountDir(t), "covered")
	t.Cleanup(func() {
		for i := 0; i < 4 && hostpathtest.Mounted(t, dest); i++ {
			_ = unix.Unmount(dest, unix.MNT_DETACH)
		}
	})
	if _, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "volume.txt"), []byte("the volume's data"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreignMount(t, dest) // someone else's mount over the bind, the bind still below it

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
