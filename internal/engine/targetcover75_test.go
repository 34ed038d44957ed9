package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// TestReconcileSaysAPublishedTargetCoveredByAnotherMount: a published claim's target, mounted
// by NodePublishVolume, has another file system mounted over it since (a tmpfs, by hand or by a
// program): the alloc at that path now reads and writes the tmpfs, not the volume, and what it
// writes there is lost with the tmpfs. Reconcile takes "something is mounted at the target"
// for "the claim's mount is in place" (restore's pass.mounted check, then settleMounted) and
// reports nothing: no action, no problem, exit 0, "every mount is in place". A target that does
// not show what was published there (its topmost mount not the one NodePublishVolume made, as
// the staging's is checked, stagingCovered) must be a problem naming the target and the umount;
// followed (the cover unmounted), the next pass finds the volume's mount and says nothing.
// Found by helper review75.
func TestReconcileSaysAPublishedTargetCoveredByAnotherMount(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil && len(rep.Problems) == 0 {
		t.Fatalf("reconcile = %+v, nil: nothing said of claim %q for alloc %q whose target %s shows a tmpfs mounted over the volume; "+
			"want a problem naming the target", rep, cl.VolumeID, cl.Alloc, cl.TargetPath)
	}
	if !strings.Contains(fmt.Sprint(err, rep.Problems), cl.TargetPath) || !strings.Contains(fmt.Sprint(err, rep.Problems), "umount") {
		t.Errorf("reconcile = %v, problems %+v; want the covered target %s named, and its umount", err, rep.Problems, cl.TargetPath)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() {
		t.Fatalf("claims after the reconcile = %+v; want the claim held as it was", live)
	}
	// As advised: the cover unmounted, the volume's mount is in place again.
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("umount the tmpfs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cl.TargetPath, "volume-data")); err != nil {
		t.Fatalf("the volume's data after the cover is unmounted: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile after the cover is unmounted = %+v, %v; want nothing wrong", rep, err)
	}
}

// publishedUnderACover is a kernel harness whose volume v, claimed by alloc "a" (published, "the
// volume's" data written in it), has a tmpfs mounted over its target since, unmounted when the
// test ends.
func publishedUnderACover(t *testing.T) (*harness, ClaimInfo) {
	t.Helper()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "volume-data"), []byte("the volume's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH) })
	if _, err := os.Stat(filepath.Join(cl.TargetPath, "volume-data")); !os.IsNotExist(err) {
		t.Fatalf("the target still shows the volume's data under the tmpfs: %v", err)
	}
	return h, cl
}
