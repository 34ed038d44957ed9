package engine

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A reader's group: the volume read-only (its read_only, which makes the claim's target a
// read-only mount), its volume_mount without read_only of its own, as Nomad jobs commonly say
// it; the bind made of the read-only target is read-only too. The claim's target is then
// unmounted by hand (as TestFilesWrittenAtAnUnmountedTargetAreSetAsideBeforeItsRelease does;
// boundElsewhere leaves the bind to the release, as the claim's own, when the target is not
// mounted), and the group stopped. The release must unmount the claim's bind. otherMode compares
// the bind with what is at the target path now, the state dir's bare writable directory, finds
// the read-only bind "not as this claim's bind was made", and leaves it: the claim is freed,
// the stop succeeds, and the volume stays bound at the alloc's destination with no claim naming
// it. The mode is no longer judged at the release (it also took the bind an older volctl let
// two claims share for another's, TestReleaseLeavesAVolumeMountAnotherClaimIsBoundAt). Found
// by helper review62, reviewing this round's fix.
func TestReleaseOfABindReadOnlyByItsTargetAfterTheTargetWasUnmountedUnbindsIt(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dest := filepath.Join(hostpathtest.MountDir(t), "r", "data")
	t.Cleanup(func() { _ = unix.Unmount(dest, unix.MNT_DETACH) })
	g := sharedDestGroup("reader", 1, true, dest)
	g.Mounts[0].ReadOnly = false // read-only through the volume's read_only alone
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	ci, err := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("reader", 0))
	if err != nil {
		t.Fatal(err)
	}
	unmountedAndWritten(t, ci.TargetPath, false)
	_, err = h.e.StopGroup(h.ctx, "reader")
	if _, cerr := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("reader", 0)); cerr == nil {
		t.Fatalf("stop reader = %v: the claim is still held", err)
	}
	if hostpathtest.Mounted(t, dest) {
		t.Errorf("stop reader = %v: its claim is freed, but its bind of the volume is still mounted at %s, named by no claim", err, dest)
	}
}
