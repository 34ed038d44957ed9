package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestDegradedRestoreOfAnOldBackupBesideAnUnknownMountIsRefused: an old backup restored whose
// claim of alloc a was being restored when it was taken (a
// restore that failed: node-staged, degraded, held for reconcile); a released since and c
// claimed the single-writer volume (multi-node-single-writer: a plugin that does not count
// publications), its target mounted, unknown to the restored database.
// The rule that keeps reconcile from restoring a published claim beside a mounted target no
// claim records (checkRestoreBeside) held only for a published claim, not for the restore a
// failed one left to the pass: NodePublishVolume was sent for the gone alloc a beside c's live
// mount, a single-writer volume published to two allocs.
// Found by helper review70.
func TestDegradedRestoreOfAnOldBackupBesideAnUnknownMountIsRefused(t *testing.T) {
	t.Parallel()
	h, a, c := degradedOldBackup(t)
	rep, err := h.e.Reconcile(h.ctx)
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n > 0 {
		t.Errorf("reconcile sent NodePublishVolume %d time(s) for the old backup's alloc a beside alloc c's mount at %s that no claim records (report %+v, %v); want it refused as a published claim's restore is", n, c.TargetPath, rep, err)
	}
	var said []string
	for _, p := range rep.Problems {
		said = append(said, p.Message)
	}
	if all := strings.Join(said, "\n"); err == nil || !strings.Contains(all, c.TargetPath) {
		t.Errorf("reconcile: %v, problems:\n%s\nwant one naming %s", err, all, c.TargetPath)
	}
	if cls := h.liveClaims("v"); len(cls) != 1 || cls[0].ID != a.ID || cls[0].State == store.ClaimPublished {
		t.Errorf("claims after reconcile: %+v; want a's held, not published beside c's mount", cls)
	}
}

// TestDegradedClaimAgainOfAnOldBackupBesideAnUnknownMountIsRefused: the same old backup, before
// any reconcile: alloc a (its task restarted) claims again. The claim again is refused alike,
// nothing sent, as a published claim's restore is
// (TestReconcileDoesNotRestoreAClaimOfAnOldBackupBesideAMountItDoesNotKnow); the degraded claim
// was driven on and published beside c's mount.
// Found by helper review70.
func TestDegradedClaimAgainOfAnOldBackupBesideAnUnknownMountIsRefused(t *testing.T) {
	t.Parallel()
	h, a, c := degradedOldBackup(t)
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n > 0 || err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), c.TargetPath) {
		t.Errorf("alloc a claiming again beside alloc c's mount at %s that no claim records: %+v, %v, NodePublishVolume sent %d time(s); want a conflict naming that mount, nothing sent",
			c.TargetPath, cl, err, n)
	}
	if cls := h.liveClaims("v"); len(cls) != 1 || cls[0].ID != a.ID || cls[0].State == store.ClaimPublished {
		t.Errorf("claims after the claim again: %+v; want a's held, not published beside c's mount", cls)
	}
}

// degradedOldBackup leaves h with an old backup restored: alloc a's claim of the
// multi-node-single-writer volume v node-staged and degraded (a restore that failed when the
// backup was taken), and alloc c's claim, made since, mounted and unknown to the database.
func degradedOldBackup(t *testing.T) (h *harness, a, c ClaimInfo) {
	t.Helper()
	h = newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeSingleWriter)))
	a = h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	h.mounts.markGone(a.TargetPath)
	h.mounts.markGone(st.StagingPath)
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with NodePublishVolume unavailable succeeded")
	}
	h.faults.Clear()
	if cls := h.liveClaims("v"); len(cls) != 1 || cls[0].State != store.ClaimNodeStaged || !cls[0].Degraded {
		t.Fatalf("claims after the failed restore: %+v; want a's node-staged, degraded", cls)
	}
	h.mounts.reset()
	restore := backupState(t, h, Config{})
	h.release("v", "a")
	c = h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	restore()
	h.faults.ResetCounts()
	return h, a, c
}
