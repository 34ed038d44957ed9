package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// foreignMount bind-mounts a directory of its own, holding a file "mine", at dest: a disk an
// admin mounted there, or another volume's staging path. It is unmounted at cleanup.
func foreignMount(t *testing.T, dest string) {
	t.Helper()
	src := filepath.Join(hostpathtest.MountDir(t), "foreign-"+filepath.Base(dest))
	for _, d := range []string{src, dest} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "mine"), []byte("not the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dest, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dest, unix.MNT_DETACH) })
}

// TestVolumeMountOverSomethingElseMountedIsRefusedAndLeft: a group's volume_mount is bound
// at its destination, and `group run --help` prints that destination as where the alloc sees
// the volume. A destination that was already a mount point of something else (an admin's
// disk, another volume's staging path under the state dir) was taken as bound ("idempotent"):
// the run said MOUNTED AT it while it held the other file system, which the alloc would write
// as its volume; and the release, or a group stop, unmounted whatever was mounted there,
// pulling the other mount from under its users (another claim's staging, in the test with the
// binary). The bind is refused, naming the destination (the claim left for reconcile, as for
// any failed bind, and reconcile names it again); and a release leaves a mount at a
// destination that is not the claim's bind. Real mounts, as root.
func TestVolumeMountOverSomethingElseMountedIsRefusedAndLeft(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dest := filepath.Join(hostpathtest.MountDir(t), "busy")
	foreignMount(t, dest)
	_, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest})
	if err == nil || !strings.Contains(err.Error(), "volume_mount "+dest+": something else is mounted there") {
		t.Fatalf("claim with a volume_mount over another mount = %v; want it refused, naming the destination", err)
	}
	// Left for reconcile, as any failed bind; reconcile says so again and binds nothing there.
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "something else is mounted there") {
		t.Fatalf("reconcile = %+v, %v; want the destination named as a problem", rep, err)
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "mine")); err != nil || string(b) != "not the volume" {
		t.Fatalf("the other mount at %s after the release: %q, %v; want it left in place", dest, b, err)
	}

	// Bound, then replaced by someone else's mount: the release leaves that mount alone.
	dest2 := filepath.Join(hostpathtest.MountDir(t), "later")
	h.createWriterVolume(t, "logs")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "logs", Alloc: "a",
		Binds: []spec.VolumeMount{{Volume: "logs", Destination: dest2, PropagationMode: spec.PropagationPrivate}}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(dest2, 0); err != nil {
		t.Fatal(err)
	}
	foreignMount(t, dest2)
	if _, err := h.e.Release(h.ctx, "logs", "a"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest2, "mine")); err != nil || string(b) != "not the volume" {
		t.Fatalf("the other mount at %s after the release: %q, %v; want it left in place", dest2, b, err)
	}
}

// TestVolumeMountInsideTheStateDirIsRefused: the state dir's staging and publish paths are
// volctl's and its plugins' ("State on disk"). A group's volume_mount destination there (a
// staging path not mounted yet, say) was bound, and the next NodeStageVolume of that volume
// mounted over the bind: the group's alloc saw the other volume, and its release unbound the
// other volume's staging. It is refused before anything is recorded (exit 2).
func TestVolumeMountInsideTheStateDirIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	for _, dest := range []string{
		filepath.Join(h.e.cfg.StateDir, "staging", "mem", "other"),
		h.e.cfg.StateDir,
	} {
		// Should it be bound after all (a regression), it is unmounted before the dir goes.
		t.Cleanup(func() { _ = unix.Unmount(dest, unix.MNT_DETACH) })
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web[0]", Group: "",
			Binds: []spec.VolumeMount{{Volume: "d", Destination: dest, PropagationMode: spec.PropagationPrivate}}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "volume_mount "+dest+" is in the state dir") {
			t.Fatalf("claim with a volume_mount at %s = %v; want it refused as invalid, naming it", dest, err)
		}
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		t.Fatalf("claims after the refused volume_mounts = %+v", live)
	}
}
