package engine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// A volume's staging lazily unmounted by hand (`umount -l`) while a claim's target, bound from
// it, stays mounted: the target still reaches the volume, and reconcile leaves both as they
// are. It cannot tell a staging unmounted so from one a plugin never mounts at its staging path
// (CSI lets a plugin keep its staging as it likes, and the lost-staging rule allows for it), and
// unmounting the target would pull the volume from under its alloc. The next claim of the
// volume stages it again (restageIfLost) and reaches the same data, and the releases leave
// nothing mounted. Real mounts, as root.
func TestStagingUnmountedUnderItsTargetsIsStagedAgainByTheNextClaim(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	a := h.claimNew(t, "data", "a", spec.MultiNodeMultiWriter)
	staging := stagingPath(h.e.StateDir(), "hp", "data")
	if err := unix.Unmount(staging, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("reconcile = %+v, %v; want the mounted target left as it is", rep, err)
	}
	if err := os.WriteFile(filepath.Join(a.TargetPath, "x"), []byte("through a"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(b.TargetPath, "x")); err != nil || string(got) != "through a" {
		t.Fatalf("b reads %q, %v through %s; want what a wrote", got, err, b.TargetPath)
	}
	if m := mountsUnder(t, staging); len(m) != 1 {
		t.Fatalf("mounts at the staging after b's claim: %v, want it staged again", m)
	}
	for _, alloc := range []string{"a", "b"} {
		if _, err := h.e.Release(h.ctx, "data", alloc); err != nil {
			t.Fatalf("release %s: %v", alloc, err)
		}
	}
	if m := mountsUnder(t, h.e.StateDir()); len(m) != 0 {
		t.Fatalf("mounts left under the state dir: %v", m)
	}
}
