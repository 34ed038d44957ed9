package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestReleaseOfABindUnderACoverMovedOverItIsRefused: alloc a's claim of "data" has a
// volume_mount bound at dest, recorded by its mount ID; a hand then moves a tmpfs it mounted
// elsewhere over dest (`mount --move`). The table lists mounts in the order made and a moved
// mount keeps its place, so the cover is listed before the bind it covers: bindCovered, which
// still reads the table in its order ("stacked on one path, listed in the order made"), finds
// the recorded bind last, counts nothing above it, and unbind then takes the cover for
// someone else's mount "in place of" the bind and leaves both. The release says done, the claim
// is freed, and the volume stays bound, writable, under the cover with no claim naming it: what
// TestReleaseOfABindCoveredByAnotherMountIsRefused guards against, back for a cover moved
// there rather than mounted there. chainAt orders StackAt and mountRootsFromTable down the
// parents of the mount the path leads to; bindCovered's record branch did not get it. Correct:
// the release is refused naming the cover's umount at dest (1 mount stacked over the bind), and
// the volume is not left bound with no claim.
// Found by helper review76 (own8).
func TestReleaseOfABindUnderACoverMovedOverItIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	scratch := handsScratchTmpfs(t) // mounted before the bind: listed before it, and kept there once moved
	dest := filepath.Join(hostpathtest.MountDir(t), "moved-over")
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
	if err := unix.Mount(scratch, dest, "", unix.MS_MOVE, ""); err != nil {
		t.Fatalf("move the hand's tmpfs from %s over the bind at %s: %v", scratch, dest, err)
	}
	if err := os.WriteFile(filepath.Join(dest, "mine"), []byte("not the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Release(h.ctx, "data", "a")
	if err == nil {
		if uerr := unix.Unmount(dest, 0); uerr != nil {
			t.Fatalf("unmount the cover: %v", uerr)
		}
		b, rerr := os.ReadFile(filepath.Join(dest, "volume.txt"))
		if rerr == nil {
			t.Fatalf("release of \"data\" for alloc \"a\" said done, the claim freed, but the volume is still bound at %s under the tmpfs moved over it "+
				"(volume.txt reads %q once the cover is gone): it stays readable and writable there with no claim; want the release refused naming `umount %s`",
				dest, b, dest)
		}
		return
	}
	if !strings.Contains(err.Error(), "umount "+dest) || !strings.Contains(err.Error(), "1 mount(s) stacked") {
		t.Errorf("release of \"data\" for alloc \"a\", one tmpfs moved over its bind at %s: %v; want it refused naming the cover's umount, once", dest, err)
	}
	if b, rerr := os.ReadFile(filepath.Join(dest, "mine")); rerr != nil || string(b) != "not the volume" {
		t.Errorf("the hand's tmpfs at %s after the refused release: %q, %v; want it left in place", dest, b, rerr)
	}
}

// TestAMountLeftBesideAPropagationCopySaysUnmountItOnce: the state dir's publish directory is a
// shared tmpfs bound over itself (the kubelet idiom), so the table lists every mount at a target
// twice: the plugin's, and its propagation copy on the hidden tmpfs below, no layer of what the
// path shows (chainAt). The plugin answers NodeUnpublishVolume NOT_FOUND with the target still
// mounted, and the release's refusal counts the mounts at the target with StackedMounts, which
// counts every mount the table lists there, the hidden copy too: "(2 mounts are stacked there:
// unmount it 2 times)". One umount takes the plugin's mount and, by propagation, its copy; the
// second umount the advice asks for fails ("not mounted"). Correct: the count is of the stack
// the path leads to (chainAt), one here, and the error says nothing of two.
// Found by helper review76 (own8).
func TestAMountLeftBesideAPropagationCopySaysUnmountItOnce(t *testing.T) {
	t.Parallel()
	h := withASharedPublishDirBoundOverItself(t)
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	t.Cleanup(func() {
		for range 3 {
			_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		}
	})
	if stack, err := (kernelMounts{}).StackAt(cl.TargetPath); err != nil || len(stack) != 1 {
		t.Fatalf("premise: the stack the target %s leads to = %v (%v); want the plugin's mount alone", cl.TargetPath, stack, err)
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.NotFound)
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), cl.TargetPath) {
		t.Fatalf("premise: release of v by a, its target left mounted = %v; want it refused naming the target", err)
	}
	// The advice, followed: the first umount takes the plugin's mount and its copy.
	if uerr := unix.Unmount(cl.TargetPath, 0); uerr != nil {
		t.Fatalf("premise: umount %s: %v", cl.TargetPath, uerr)
	}
	second := unix.Unmount(cl.TargetPath, 0)
	if strings.Contains(err.Error(), "2 mounts are stacked there") {
		t.Errorf("release of v by a, one mount left at the target %s (and its hidden propagation copy): %v\n"+
			"want no word of 2 mounts stacked there: the second umount it asks for fails (%v)", cl.TargetPath, err, second)
	}
}
