package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverMovedOverTheTarget: alloc a's
// published target of volume v has, by hand, a tmpfs mounted elsewhere before the claim moved
// over it (`mount --move`), and the alloc writes into it. On a kernel without statmount(2)
// (before Linux 6.8) targetCovered's first look is mountRootsFromTable, which took the last
// mount the table lists at the target for the topmost: the table lists mounts in the order made
// and a moved mount keeps its place, so the last listed is the volume's own mount under the
// cover. The release takes the
// target for the volume's mount, sends NodeUnpublishVolume, and the plugin's umount takes off
// the topmost, the hand's cover: what the alloc wrote is gone. Correct: the topmost is the
// mount the path leads to (its mount ID, as TopParentAt reads it, or the top of the parent
// chain), so the release is refused naming the covered target, and the file stays.
// Found by helper review76 (own7).
func TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverMovedOverTheTarget(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	scratch := handsScratchTmpfs(t)
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if cl.targetMount == nil {
		t.Fatalf("premise: nothing recorded of what the target %s shows", cl.TargetPath)
	}
	if err := unix.Mount(scratch, cl.TargetPath, "", unix.MS_MOVE, ""); err != nil {
		t.Fatalf("move the hand's tmpfs from %s over the target %s: %v", scratch, cl.TargetPath, err)
	}
	t.Cleanup(func() {
		for range 3 {
			_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		}
	})
	written := filepath.Join(cl.TargetPath, "written-by-the-alloc")
	if err := os.WriteFile(written, []byte("the alloc's"), 0o600); err != nil {
		t.Fatal(err)
	}
	// On this kernel (statmount) the release sees the cover: the premise of the same release
	// where the table is read.
	h.e.cfg.Mounts = tableReadMounts{}
	_, rerr := h.e.Release(h.ctx, "v", "a")
	if _, err := os.Stat(written); err != nil {
		t.Errorf("release of v by a on a kernel without statmount (err %v) unmounted the tmpfs moved by hand over the target %s, "+
			"and with it the file the alloc wrote there (%v): the volume's mount, listed last, was taken for the topmost; want the release refused, the cover named",
			rerr, cl.TargetPath, err)
	}
	if rerr == nil || !strings.Contains(rerr.Error(), cl.TargetPath) {
		t.Errorf("release of v by a over the covered target %s = %v; want it refused naming the target", cl.TargetPath, rerr)
	}
}

// TestCoverMovedOverATargetIsSaidStackedOnceNotReplaced: the target of
// TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverMovedOverTheTarget, on this kernel
// (statmount: the cover is seen, the release refused). But coverOf counts the stack from
// StackAt, read in the table's order: the moved cover keeps
// its earlier place in the table, below the volume's mount it covers, so the volume's mount is
// not found below the topmost and the refusal says the target was "unmounted, and another file
// system mounted in its place" and to unmount "until `findmnt` lists nothing": untrue (the
// volume's mount is there, under one cover), and the advice followed unmounts the volume from
// under the alloc too. Correct: one mount said stacked over the volume's, its umount once.
// Found by helper review76 (own7).
func TestCoverMovedOverATargetIsSaidStackedOnceNotReplaced(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	scratch := handsScratchTmpfs(t)
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err := unix.Mount(scratch, cl.TargetPath, "", unix.MS_MOVE, ""); err != nil {
		t.Fatalf("move the hand's tmpfs from %s over the target %s: %v", scratch, cl.TargetPath, err)
	}
	t.Cleanup(func() {
		for range 3 {
			_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		}
	})
	_, rerr := h.e.Release(h.ctx, "v", "a")
	if rerr == nil || !strings.Contains(rerr.Error(), cl.TargetPath) {
		t.Fatalf("premise: release of v by a over the covered target %s = %v; want it refused naming the target", cl.TargetPath, rerr)
	}
	if !strings.Contains(rerr.Error(), "has 1 mount(s) stacked") || !strings.Contains(rerr.Error(), ", once)") {
		t.Errorf("release of v by a, one tmpfs moved over the target %s: %v\nwant one mount said stacked over the volume's, its umount once", cl.TargetPath, rerr)
	}
}
