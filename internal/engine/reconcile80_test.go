package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestReconcileOldBackupAdviceToReleaseAGoneAllocWorks: an old backup restored holds alloc a's
// claim published, its target unmounted; alloc c took the volume since, its target mounted and
// unknown to the database. Reconcile refuses to restore a's claim (checkRestoreBeside) and its
// problem advised: "if alloc "a" is gone, `volctl volume release v --alloc a`". Followed, that
// release does not unstage the volume from under c's mount (checkUnrecordedTargets), exit 1, a's
// claim left on its release path: the advice said nothing of that. It says now that the release
// finishes once that mount is unmounted, by reconcile; followed to the end (c stopped, its
// mount undone), a's claim is freed.
// Found by helper review80 (reconcile).
func TestReconcileOldBackupAdviceToReleaseAGoneAllocWorks(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	restore := backupState(t, h, Config{Mounts: kernelMounts{}})
	h.release("v", "a")
	c := h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	restore()

	rep, err := h.e.Reconcile(h.ctx)
	advice := ""
	for _, p := range rep.Problems {
		if strings.Contains(p.Message, "not restored") {
			advice = p.Message
		}
	}
	if err == nil || !strings.Contains(advice, "volctl volume release v --alloc a") || !strings.Contains(advice, "finishes once that is unmounted") {
		t.Fatalf("reconcile beside %s: %v, problems %+v; want one advising the release of alloc a, and saying it finishes once %s is unmounted", c.TargetPath, err, rep.Problems, c.TargetPath)
	}
	// Alloc a is gone: the advice is followed. The release does not unstage under c's mount.
	_, _ = h.e.Release(h.ctx, "v", "a")
	if !mountedAt(t, c.TargetPath) {
		t.Fatalf("alloc c's mount %s is gone after a's release", c.TargetPath)
	}
	// c stops: its CO undoes its mount. Then reconcile finishes a's release.
	pc, err := csi.New(csi.Config{NodeSocket: h.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.NodeUnpublishVolume(h.ctx, csi.NodeUnpublishVolumeRequest{VolumeID: h.externalID("v"), TargetPath: c.TargetPath}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile once c's mount is undone: %v", err)
	}
	if cls := h.liveClaims("v"); len(cls) != 0 {
		t.Errorf("claims after the advice was followed to the end: %+v; want alloc a's freed", cls)
	}
}
