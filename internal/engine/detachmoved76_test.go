package engine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestForcedDetachLeavesAHandsCoverMovedOverATargetInsideAMountOverItsPublishDirectory: the
// plugin's NodePublishVolume mounted over the claim's publish directory and published the target
// inside that mount. Later, by hand, a file system mounted elsewhere before the claim (a scratch
// tmpfs the alloc's data went into) is moved over the target (`mount --move`), and the alloc
// writes into it. A release refuses (targetCovered, which asks the kernel for the topmost mount
// at the target, sees the cover). The forced detach's up-front check asks
// mountedInsideItsPublishDir, whose TopParentAt takes the last mount the table lists at the
// target for the topmost: but the table lists mounts in the order they were made, and a moved
// mount keeps its place, so the last one listed is the plugin's target mount under the cover,
// whose parent is the mount over the publish directory. The cover is taken for the plugin's
// doing, the detach unmounts the publish directory until nothing is mounted there, and what the
// alloc wrote is gone, the claim said released. Correct: the topmost mount at the target is the
// one no other mount at that path is mounted on (or the one statx/statmount of the path names,
// as MountRoots reads it); here its parent is the target's own mount, so the detach stops before
// undoing anything, the cover named, as for any hand's cover of the target.
// Found by helper review76 (own5).
func TestForcedDetachLeavesAHandsCoverMovedOverATargetInsideAMountOverItsPublishDirectory(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	// The hand's file system, mounted before the claim's mounts (a scratch space elsewhere).
	scratch := handsScratchTmpfs(t)
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	publishedInsideAMountOverItsDir(t, h, target)
	// The hand's cover: the scratch tmpfs moved over the target, and what the alloc wrote into it.
	if err := unix.Mount(scratch, target, "", unix.MS_MOVE, ""); err != nil {
		t.Fatalf("move the hand's tmpfs from %s over the target %s: %v", scratch, target, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	writtenUnderACoverSurvivesTheForcedDetach(t, h, target, "moved by hand")
}

// handsScratchTmpfs is a tmpfs of the hand's, mounted private at a scratch directory before the
// claim's mounts are made, to be moved over a target (mount --move).
func handsScratchTmpfs(t *testing.T) string {
	t.Helper()
	scratch := filepath.Join(hostpathtest.MountDir(t), "scratch")
	if err := os.MkdirAll(scratch, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", scratch, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount the hand's tmpfs at %s: %v", scratch, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(scratch, unix.MNT_DETACH) })
	if err := unix.Mount("", scratch, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make %s private: %v", scratch, err)
	}
	return scratch
}
