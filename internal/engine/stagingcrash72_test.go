package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// coveredStagingAfterStage sets up volume w staged (its mount identity recorded) with claim "a"
// left node-staged: the plugin was killed while NodePublishVolume ran (UNAVAILABLE at every
// try), which leaves the claim for reconcile exactly as a volctl killed before the answer
// would. Then another file system (holding other-data) is mounted over w's staging, as a
// plugin answering another volume's NodeStageVolume at the wrong path does
// (TestStageMountedOverAnotherVolumesStagingIsNotPublishedAsIt). It returns the harness and the
// staging path.
func coveredStagingAfterStage(t *testing.T) (*harness, string) {
	t.Helper()
	h := kernelHarness(t, nil)
	other := otherDataDir(t)
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	staging := stagingPath(h.dir, "mem", "w")

	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "a"})
	h.faults.Clear(csi.RPCNodePublishVolume)
	t.Logf("claim of w for a, NodePublishVolume cut off: %v", err)
	live := h.liveClaims("w")
	if len(live) != 1 || live[0].State != store.ClaimNodeStaged {
		t.Fatalf("claims of w after NodePublishVolume was cut off: %+v; want one, node-staged", live)
	}
	if st, ok, err := h.e.getStaging(h.ctx, "w"); err != nil || !ok || !st.Staged || st.MountRoot == "" {
		t.Fatalf("staging of w: %+v %v %v; want it staged with what its mount shows recorded", st, ok, err)
	}
	if err := unix.Mount(other, staging, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(staging, unix.MNT_DETACH) })
	return h, staging
}

// TestNodeStagedClaimDrivenOnOverACoveredStagingIsNotPublished: a claim left node-staged (the
// plugin killed in NodePublishVolume, or volctl killed before its answer) was driven on by
// reconcile straight to NodePublishVolume, nodeStage and its stagingCovered skipped for a claim
// already node-staged onto a staging recorded staged: what was mounted over the staging since
// (another volume's stage at the wrong path) was what the claim was published from, the alloc
// handed another file system. It is refused as a join is, the claim left node-staged (not rolled
// back: its release would unstage what covers the staging), and the way out it names works.
// Found by helper review72.
func TestNodeStagedClaimDrivenOnOverACoveredStagingIsNotPublished(t *testing.T) {
	h, staging := coveredStagingAfterStage(t)
	rep, rerr := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", rerr, rep.Problems)
	live := h.liveClaims("w")
	if len(live) != 1 {
		t.Fatalf("claims of w after reconcile: %+v", live)
	}
	target := live[0].TargetPath
	defer func() { _ = unix.Unmount(target, unix.MNT_DETACH) }()
	if _, err := os.Stat(filepath.Join(target, "other-data")); err == nil || live[0].State == store.ClaimPublished {
		t.Fatalf("claim of w for alloc a driven on by reconcile from node-staged: state %s, its target %s shows other-data (stat: %v): "+
			"published from what was mounted over w's staging %s since it was staged, its recorded mount identity never compared",
			live[0].State, target, err, staging)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "umount") {
		t.Fatalf("reconcile's problems: %+v; want one naming the umount of the staging", rep.Problems)
	}
	// The way out it names: the cover unmounted once, the claim is published from the staging.
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	followedCoveredStagingAdvice(t, h, "w", target)
}

// followedCoveredStagingAdvice runs reconcile once the mount over volume vol's staging is
// gone and checks its one claim is published at target from the volume, not from other-data.
func followedCoveredStagingAdvice(t *testing.T, h *harness, vol, target string) {
	t.Helper()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the staging was uncovered: %v %+v", err, rep.Problems)
	}
	live := h.liveClaims(vol)
	if len(live) != 1 || live[0].State != store.ClaimPublished || live[0].Degraded {
		t.Fatalf("claims of %s once the staging was uncovered and reconcile ran: %+v; want one published", vol, live)
	}
	if _, err := os.Stat(filepath.Join(target, "other-data")); err == nil {
		t.Fatalf("target %s still shows other-data", target)
	}
}

// TestNodeStagedClaimAgainOverACoveredStagingIsRefused: the same, driven on by the alloc's
// claim again (what the cut-off claim's error leads a user to), not by reconcile. Found by
// helper review72.
func TestNodeStagedClaimAgainOverACoveredStagingIsRefused(t *testing.T) {
	h, staging := coveredStagingAfterStage(t)
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "a"})
	if err == nil {
		defer func() { _ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH) }()
		_, serr := os.Stat(filepath.Join(cl.TargetPath, "other-data"))
		t.Fatalf("claim of w for alloc a again, its claim node-staged: published at %s (other-data there: %t), from what was mounted over w's staging %s since it was staged; "+
			"want it refused as a join of a covered staging is", cl.TargetPath, serr == nil, staging)
	}
	if !strings.Contains(err.Error(), "umount") {
		t.Errorf("claim again refused: %v; want the refusal to name the umount of the staging", err)
	}
}

// TestRestoreOntoAStagingReplacedAtBootIsRefused: a host came back from a crash with volume w's
// staging and its claim's target unmounted, and another file system mounted at the staging
// path (another plugin's, or an fstab line's). The staging row said staged and the path was a
// mount point, so it was not taken for a lost staging, and reconcile restored the claim straight
// onto it, the alloc handed the other file system, where a join of that staging is refused. The
// restore is refused, the claim held degraded, and the way out it names works. Found by helper
// review72.
func TestRestoreOntoAStagingReplacedAtBootIsRefused(t *testing.T) {
	h := kernelHarness(t, nil)
	other := otherDataDir(t)
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	staging := stagingPath(h.dir, "mem", "w")
	// The reboot: every mount gone. The plugin keeps its stagings recorded on disk (as
	// volctl's hostpath does) and, its targets' mounts gone, has forgotten the target.
	c, err := csi.New(csi.Config{NodeSocket: h.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.NodeUnpublishVolume(h.ctx, csi.NodeUnpublishVolumeRequest{VolumeID: h.externalID("w"), TargetPath: a.TargetPath}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	// Something else mounted at the staging path at boot.
	if err := unix.Mount(other, staging, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(staging, unix.MNT_DETACH) })
	defer func() { _ = unix.Unmount(a.TargetPath, unix.MNT_DETACH) }()

	rep, rerr := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", rerr, rep.Problems)
	live := h.liveClaims("w")
	if len(live) != 1 {
		t.Fatalf("claims of w after reconcile: %+v", live)
	}
	if _, err := os.Stat(filepath.Join(a.TargetPath, "other-data")); err == nil || (live[0].State == store.ClaimPublished && !live[0].Degraded) {
		t.Fatalf("claim of w for alloc a restored by reconcile after the reboot: state %s, degraded %t, its target %s shows other-data (stat: %v): "+
			"restored from the file system mounted at w's staging %s in place of the one it was staged with, its recorded mount identity never compared",
			live[0].State, live[0].Degraded, a.TargetPath, err, staging)
	}
	// The way out it names: what is there unmounted, the volume detached (its last release
	// unstages it), and claimed again, which stages it anew.
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Detach(h.ctx, "w", false); err != nil {
		t.Fatalf("volume detach w, as the refusal advises: %v", err)
	}
	again := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	defer func() { _ = unix.Unmount(again.TargetPath, unix.MNT_DETACH) }()
	if _, err := os.Stat(filepath.Join(again.TargetPath, "other-data")); err == nil {
		t.Fatalf("claimed again after the advice was followed, target %s shows other-data", again.TargetPath)
	}
}

// TestReleaseOverACoveredStagingLeavesTheCover: the claim refused as driven on over a covered
// staging is left node-staged so that no NodeUnstageVolume has the plugin unmount what covers the
// staging; its release (the alloc stopped) sent that NodeUnstageVolume all the same, and the
// plugin unmounted the cover, not what it staged. A release over a covered staging sends none,
// names the umount, and reconcile finishes it once that is done. Found by helper review72 (own).
func TestReleaseOverACoveredStagingLeavesTheCover(t *testing.T) {
	h, staging := coveredStagingAfterStage(t)
	rep, rerr := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", rerr, rep.Problems)
	live := h.liveClaims("w")
	if len(live) != 1 || live[0].State != store.ClaimNodeStaged {
		t.Fatalf("setup: claims of w after reconcile: %+v; want one node-staged", live)
	}
	h.mem.ResetCalls()
	res, err := h.e.Release(h.ctx, "w", "a")
	t.Logf("release of w for a: %+v %v", res, err)
	_, serr := os.Stat(filepath.Join(staging, "other-data"))
	if serr != nil || err == nil {
		t.Fatalf("after the release of the claim left node-staged, the staging %s no longer shows other-data (%v): NodeUnstageVolume sent %d time(s) "+
			"over the mount covering the staging, and the plugin unmounted that, the very unstage leaving the claim node-staged was to avoid",
			staging, serr, h.mem.CallCount(csi.RPCNodeUnstageVolume))
	}
	if n := h.mem.CallCount(csi.RPCNodeUnstageVolume); n != 0 || !strings.Contains(err.Error(), "umount") {
		t.Fatalf("release over the cover: %v, NodeUnstageVolume sent %d time(s); want none sent and the umount named", err, n)
	}
	// The way out it names: the cover unmounted, then reconcile finishes the release.
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the cover was unmounted: %v %+v", err, rep.Problems)
	}
	if live := h.liveClaims("w"); len(live) != 0 {
		t.Fatalf("claims of w after the release was finished by reconcile: %+v", live)
	}
	if mp, err := h.e.cfg.Mounts.Mounted(h.dir, staging); err == nil && mp.Mounted {
		t.Errorf("w's staging %s still mounted after its release was finished", staging)
	}
}

// otherDataDir makes a directory holding a file other-data: another file system's content, to
// mount where a volume's staging is and tell by that file whether a target shows it.
func otherDataDir(t *testing.T) string {
	t.Helper()
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "other-data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return other
}
