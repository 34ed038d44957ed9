package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// rebootWithPluginThatRemembers claims volume v (access mode am) for alloc a with real mounts,
// writes a file at its target, then takes both the target's and the staging's mounts away, as
// a reboot does, while the plugin keeps its records of both (as the CSI host-path driver
// does): NodeStageVolume of the remembered staging is answered OK with nothing mounted.
func rebootWithPluginThatRemembers(t *testing.T, h *harness, am spec.AccessMode) (target, staging string) {
	t.Helper()
	h.create(volume("v", capab(am)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, ok := h.staging("v")
	if !ok || !st.Staged || st.MountRoot == "" {
		t.Fatalf("volume v's staging after the claim: %+v (recorded %t), want staged with its mount recorded", st, ok)
	}
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "volume-data"), []byte("the volume's"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cl.TargetPath, st.StagingPath} {
		if err := unix.Unmount(p, 0); err != nil {
			t.Fatalf("unmount %s: %v", p, err)
		}
	}
	return cl.TargetPath, st.StagingPath
}

// TestNewClaimAfterARebootThroughAPluginThatRemembersItsStageDoesNotLeaveTheFirstClaimUnrestorable:
// after a reboot (both mounts of claim a gone, the plugin remembering its staging), a new
// alloc b claims the multi-writer volume before any reconcile. b is not degraded, so nodeStage's
// "answered OK with nothing mounted: take back and stage once more" (cl.Degraded only) does not
// apply: the staging is recorded staged with an empty mark (MountRoot ""), b's publish of the
// bare staging is refused and rolled back. From then on the condition p.st.MountRoot != "" never
// holds again: every reconcile marks the staging lost, stages it (OK, nothing), publishes a's
// target from the bare directory and is refused, saying "each reconcile pass tries it again";
// claim a is never given its volume back (its data gone from its target) until released.
// Correct: a staging that had a mount before the reboot, answered OK with nothing mounted, is
// taken back and staged once more for a new claim too (or at least its recorded mark is not
// wiped), so that a reconcile restores a's volume at its target.
// Found by helper review82 (ownd).
func TestNewClaimAfterARebootThroughAPluginThatRemembersItsStageDoesNotLeaveTheFirstClaimUnrestorable(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	target, _ := rebootWithPluginThatRemembers(t, h, spec.MultiNodeMultiWriter)
	t.Cleanup(func() {
		_, _ = h.e.Release(h.ctx, "v", "b")
		_, _ = h.e.Release(h.ctx, "v", "a")
	})
	_, berr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	var (
		rep ReconcileReport
		err error
	)
	for pass := 1; pass <= 2; pass++ {
		h.mem.ResetCalls()
		if rep, err = h.e.Reconcile(h.ctx); err == nil {
			break
		}
	}
	if b, rerr := os.ReadFile(filepath.Join(target, "volume-data")); rerr != nil || string(b) != "the volume's" {
		st, _ := h.staging("v")
		t.Fatalf("after a new claim b after the reboot (its error: %v) and two reconcile passes (%v, problems %v, last pass sent %v), "+
			"claim a's target %s shows %q (%v), staging recorded %+v; want the volume restored at a's target",
			berr, err, rep.Problems, h.rpcs(), target, b, rerr, st)
	}
}

// TestRestoreStageOnceMoreWhoseUnstageIsRefusedDoesNotSayTheStagingIsMounted: a restore's
// NodeStageVolume answered OK with nothing mounted is taken back (unstageToStageOnce with left
// nil); when the plugin refuses that NodeUnstageVolume, the error says the staging "is mounted
// but not recorded staged (an earlier volctl's NodeStageVolume whose answer was not recorded,
// or a mount made by hand)" and advises "unmount <staging> by hand, then run `volctl reconcile`
// and claim again". Nothing is mounted there (that is why it was taken back): the umount fails
// ("not mounted"), the reconcile meets the same refusal, and the claim is already held. The
// wording was adapted for the NodeUnpublishVolume failure only. Correct: say the plugin answered
// NodeStageVolume OK with nothing mounted and refused the NodeUnstageVolume sent to take it back,
// with advice that works (the claim held for reconcile; a release frees it), never advising an
// unmount of a path where nothing is mounted.
// Found by helper review82 (ownd).
func TestRestoreStageOnceMoreWhoseUnstageIsRefusedDoesNotSayTheStagingIsMounted(t *testing.T) {
	t.Parallel()
	takeBackRefused(t, csi.RPCNodeUnstageVolume, "is mounted but not recorded staged")
}

// TestRestoreStageOnceMoreWhoseUnpublishIsRefusedDoesNotSayTheStagingIsMounted: the same take
// back, its NodeUnpublishVolume of the claim's own target refused. The error says the staging
// "is mounted though recorded unstaged (a restore's NodeStageVolume answered OK with nothing
// mounted ...)", contradicting itself, and advises "unmount <staging> by hand (no claim's target
// holds it) and run `volctl reconcile`": nothing is mounted there, the umount fails, and the
// reconcile meets the same refusal. Correct: no claim that the staging is mounted and no advice
// to unmount it.
// Found by helper review82 (ownd).
func TestRestoreStageOnceMoreWhoseUnpublishIsRefusedDoesNotSayTheStagingIsMounted(t *testing.T) {
	t.Parallel()
	takeBackRefused(t, csi.RPCNodeUnpublishVolume, "is mounted though recorded unstaged")
}

// takeBackRefused has a restore's stage answered OK with nothing mounted taken back, rpc (sent
// for that) refused, and checks the reconcile's problem: it carries the refusal, says nothing
// of a mount (mounted, the old words) and advises no unmount of the staging, but the release
// that frees the claim.
func takeBackRefused(t *testing.T, rpc, mounted string) {
	t.Helper()
	h := kernelHarness(t, nil)
	_, staging := rebootWithPluginThatRemembers(t, h, spec.SingleNodeWriter)
	t.Cleanup(func() { h.faults.Clear(); _, _ = h.e.Release(h.ctx, "v", "a") })
	h.faults.Inject(rpc, csitest.Fault{Code: codes.Internal, Message: "plugin busy", Times: 100})
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "plugin busy") {
		t.Fatalf("reconcile with %s refused: %v, problems %v; want one problem carrying the refusal", rpc, err, rep.Problems)
	}
	if _, m := mountsUnderFor(t, h, staging); m {
		t.Fatalf("precondition: %s is mounted", staging)
	}
	msg := rep.Problems[0].Message
	if strings.Contains(msg, mounted) || strings.Contains(msg, "unmount "+staging+" by hand") {
		t.Fatalf("the restore's problem says the staging %s is mounted and advises unmounting it by hand, where nothing is mounted: %s", staging, msg)
	}
	if !strings.Contains(msg, "volctl volume release v --alloc a") {
		t.Errorf("the restore's problem names no way out (the release that frees the claim): %s", msg)
	}
}

// mountsUnderFor says whether path is a mount point in the kernel's table.
func mountsUnderFor(t *testing.T, h *harness, path string) (map[string]bool, bool) {
	t.Helper()
	m, err := h.e.cfg.Mounts.MountsUnder(filepath.Dir(path))
	if err != nil {
		t.Fatalf("reading the mount table: %v", err)
	}
	return m, m[h.e.realPath(path)]
}
