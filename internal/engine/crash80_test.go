package engine

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestClaimAfterARebootKilledAtItsStageThenRunAgainStacksNoSecondMount: alloc a's claim of
// multi-writer volume data is published; the host reboots (its target and the staging
// unmounted) and, before any reconcile, alloc b claims the volume. The claim marks the lost
// staging unstaged (restageIfLost) and sends NodeStageVolume, which mounts the staging path, and
// volctl is killed before the answer is recorded (rpc:NodeStageVolume). `volume claim data
// --alloc b` run again, as the crash report advises finishing it, finds the staging path mounted
// though recorded unstaged, but unstageUnrecorded returns at once because claim a, recorded
// published, counts as a user of the staging ("the staging other claims use is theirs"),
// though a's mounts went with the reboot and what is mounted there is the killed command's.
// NodeStageVolume is sent again onto it: a plugin that mounts without looking first stacks a
// second mount at the staging path, b is reported published, and the volume's last release
// has NodeUnstageVolume unmount one and leaves (or fails on) the other.
//
// Correct: a staging recorded unstaged is used by no claim whatever their states say (their
// mounts went with it); the mount found there is an unrecorded NodeStageVolume's, undone first
// (or taken as staged when it shows the volume), so the volume is staged once and the releases
// leave nothing mounted.
// Found by helper review80 (crash).
func TestClaimAfterARebootKilledAtItsStageThenRunAgainStacksNoSecondMount(t *testing.T) {
	t.Parallel()
	h, staging := claimedThenRebooted(t, csitest.WithInterceptor(remountingStage()))

	if !h.killAtFailpoint(t, "rpc:NodeStageVolume", func() { _, _ = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b"}) }) {
		t.Fatalf("precondition: b's claim after the reboot never sent NodeStageVolume (rpc:NodeStageVolume)")
	}
	if n := mountsStackedAt(t, staging); n != 1 {
		t.Fatalf("precondition: %d mounts at the staging %s after the NodeStageVolume the kill cut short; want the plugin's one", n, staging)
	}

	stages := h.faults.Calls(csi.RPCNodeStageVolume)
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b"})
	if err != nil {
		t.Fatalf("b's claim run again after the kill: %v", err)
	}
	unmountAllAt(t, b.TargetPath)
	if n := mountsStackedAt(t, staging); n != 1 {
		t.Errorf("b's claim run again after the kill at its NodeStageVolume reported published with %d mounts stacked at the staging %s (NodeStageVolume sent %d more time(s) onto the mount the killed one made); want one",
			n, staging, h.faults.Calls(csi.RPCNodeStageVolume)-stages)
	}
	assertRestoredBesideTheNewClaim(t, h, staging)
}

// TestClaimAfterARebootWhoseStageMountedThenAnsweredUnavailableStacksNoSecondMount is
// TestClaimAfterARebootKilledAtItsStageThenRunAgainStacksNoSecondMount within one command: b's
// NodeStageVolume after the reboot mounts the staging path and answers UNAVAILABLE, and its
// retry's look (retryLooking, unstageUnrecorded) lets the retry go onto that mount because
// claim a, whose mounts went with the reboot, is counted as using the staging. Correct: the
// volume staged once, the releases leaving nothing mounted.
// Found by helper review80 (crash).
func TestClaimAfterARebootWhoseStageMountedThenAnsweredUnavailableStacksNoSecondMount(t *testing.T) {
	t.Parallel()
	h, staging := claimedThenRebooted(t, csitest.WithInterceptor(remountingStage()))

	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Times: 1})
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b"})
	if err != nil {
		t.Fatalf("b's claim after the reboot (its first NodeStageVolume mounted and answered UNAVAILABLE): %v", err)
	}
	unmountAllAt(t, b.TargetPath)
	if n := mountsStackedAt(t, staging); n != 1 {
		t.Errorf("b's claim after the reboot reported published with %d mounts stacked at the staging %s (NodeStageVolume sent %d time(s), its retry onto the mount the lost one made); want one",
			n, staging, h.faults.Calls(csi.RPCNodeStageVolume))
	}
	assertRestoredBesideTheNewClaim(t, h, staging)
}

// claimedThenRebooted is a hostpath engine (attaching, its server given opts) whose
// multi-writer volume "data" has alloc a's claim, after a reboot: its target's and the
// staging's mounts gone. It returns the engine and the staging path.
func claimedThenRebooted(t *testing.T, opts ...csitest.ServeOption) (*hostpathEngine, string) {
	t.Helper()
	hostpathtest.RequireMount(t)
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true}, opts...)
	a := h.claimNew(t, "data", "a", spec.MultiNodeMultiWriter)
	unmountAllAt(t, a.TargetPath)
	staging := h.writeThenReboot(t, a, "data")
	unmountAllAt(t, staging)
	return h, staging
}

// assertRestoredBesideTheNewClaim runs the reconcile pass that restores alloc a's claim of
// "data" onto the staging b's claim made, and checks it did (no problem, a published, not
// degraded), then that both claims release leaving nothing mounted at the staging.
func assertRestoredBesideTheNewClaim(t *testing.T, h *hostpathEngine, staging string) {
	t.Helper()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Errorf("reconcile after b's claim: %v, problems %+v; want a's claim restored", err, rep.Problems)
	}
	if st, err := h.e.ClaimInfo(h.ctx, "data", "a"); err != nil || st.State != string(store.ClaimPublished) || st.Degraded {
		t.Errorf("alloc a's claim after the pass: %+v, %v; want published, restored", st, err)
	}
	for _, alloc := range []string{"a", "b"} {
		if _, err := h.e.Release(h.ctx, "data", alloc); err != nil {
			t.Errorf("release of %s: %v", alloc, err)
		}
	}
	if hostpathtest.Mounted(t, staging) {
		t.Errorf("a mount is left at the staging %s after both claims' releases", staging)
		for range 4 {
			_ = unix.Unmount(staging, unix.MNT_DETACH)
		}
	}
}
