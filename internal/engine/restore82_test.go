package engine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
)

// TestRestoreAfterARebootThroughAPluginThatRemembersItsStageMountsTheVolume: a reboot takes
// claim a's target mount and its volume's staging mount away, and the plugin comes back
// remembering what it staged and published (as a plugin that keeps its state on disk, the CSI
// host-path driver's state.json, does): NodeStageVolume for the staging it records is answered
// OK from that record, mounting nothing, as the CSI spec's idempotence lets it. The restore
// marks the lost staging unstaged and stages again (OK, nothing mounted), then publishes: the
// remembered publish is taken back and asked once more, and the plugin binds the bare staging
// directory at the target, which checkTarget refuses ("NodeStageVolume staged nothing there").
// The staging is never taken back (no NodeUnstageVolume), so every pass does the same: each
// reconcile says "each reconcile pass tries it again", the claim stays degraded, and the alloc
// never gets its volume back; only a release (whose NodeUnstageVolume makes the plugin forget)
// ends it. The round-78 and round-82 fixes ask the plugin once more for a remembered publish,
// never for a remembered stage. Correct: a restaged staging the plugin answered OK for with
// nothing mounted, where a mount was recorded before the reboot, is taken back
// (NodeUnstageVolume) and staged once more, and the volume is at the target, its data there,
// after a pass (two at most here).
// Found by helper review82 (restore).
func TestRestoreAfterARebootThroughAPluginThatRemembersItsStageMountsTheVolume(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, ok := h.staging("v")
	if !ok || !st.Staged {
		t.Fatalf("volume v's staging after the claim: %+v (recorded %t), want staged", st, ok)
	}
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "volume-data"), []byte("the volume's"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The reboot: both mounts gone; the plugin keeps its records of both.
	for _, p := range []string{cl.TargetPath, st.StagingPath} {
		if err := unix.Unmount(p, 0); err != nil {
			t.Fatalf("unmount %s: %v", p, err)
		}
	}
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "v", "a") })
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
	if err != nil {
		t.Fatalf("two reconcile passes after a reboot, through a plugin that remembers its stage and publish: %v, problems %v (last pass sent %v, NodeUnstageVolume %d times); "+
			"want the volume mounted at the target again", err, rep.Problems, h.rpcs(), h.mem.CallCount(csi.RPCNodeUnstageVolume))
	}
	if b, err := os.ReadFile(filepath.Join(cl.TargetPath, "volume-data")); err != nil || string(b) != "the volume's" {
		t.Fatalf("after the reconcile the target %s shows %q (%v), want the volume's file", cl.TargetPath, b, err)
	}
	if got := h.liveClaims("v"); len(got) != 1 || got[0].Degraded || got[0].State != "published" {
		t.Fatalf("after the reconcile claim a is %+v, want published, not degraded", got)
	}
}
