package engine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// rebootAndRestartPlugin takes the mounts at paths away, as a reboot does, and serves a fresh
// mounting plugin on h's socket (behind h's faults) holding vols, as a plugin started after
// the reboot.
func rebootAndRestartPlugin(t *testing.T, h *harness, paths []string, vols ...string) {
	t.Helper()
	for _, p := range paths {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			t.Fatalf("unmount %s: %v", p, err)
		}
	}
	ext := map[string]string{}
	for _, v := range vols {
		ext[v] = h.externalID(v)
	}
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID, cfg.MountRoot = "node-1", t.TempDir()
	p := csitest.NewMemPlugin(cfg)
	for _, v := range vols {
		p.AddVolume(csi.Volume{ID: ext[v]})
	}
	t.Cleanup(func() { _ = p.UnmountAll() })
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(p), csitest.WithFaults(h.faults))
}

// After a reboot, the plugin answers the restore's NodeStageVolume ALREADY_EXISTS for a staging
// that is gone (nothing is mounted at the staging path), with a second claim of the volume lost
// in the reboot too (published in the database, its target unmounted): each pass's problem for
// each alloc names NodeStageVolume and AlreadyExists, both claims stay degraded, and the staging
// is not recorded staged. Before, stillStaged took the other claim's record for a live user of
// the staging, swallowed the ALREADY_EXISTS, recorded the staging staged, and published onto the
// empty staging path: every pass named NodePublishVolume "not staged", never the answer that
// failed the restore. Real mounts, as root. Found by helper review61.
func TestRestoreNamesNodeStageAlreadyExistsBesideAnotherLostClaim(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	b := h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	st, _ := h.staging("v")
	rebootAndRestartPlugin(t, h, []string{a.TargetPath, b.TargetPath, st.StagingPath}, "v")
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.AlreadyExists)

	for pass := 1; pass <= 2; pass++ {
		rep, err := h.e.Reconcile(h.ctx)
		if err == nil {
			t.Fatalf("pass %d: reconcile OK (%v) though NodeStageVolume answers ALREADY_EXISTS for a staging that is gone", pass, rep.Actions)
		}
		for _, cl := range h.liveClaims("v") {
			if !cl.Degraded && !hostpathtest.Mounted(t, cl.TargetPath) {
				t.Fatalf("pass %d: alloc %q's claim is %s, not degraded, with nothing mounted at %s", pass, cl.Alloc, cl.State, cl.TargetPath)
			}
		}
		for _, p := range rep.Problems {
			if p.Alloc == "a" && (!strings.Contains(p.Message, csi.RPCNodeStageVolume) || !strings.Contains(p.Message, "AlreadyExists")) {
				t.Errorf("pass %d: alloc \"a\"'s problem does not name the plugin's NodeStageVolume ALREADY_EXISTS that failed the restore:\n%s", pass, p.Message)
			}
		}
		if now, ok := h.staging("v"); ok && now.Staged && !hostpathtest.Mounted(t, now.StagingPath) {
			t.Errorf("pass %d: volume \"v\"'s staging recorded staged at %s, where nothing is mounted (the plugin answered NodeStageVolume ALREADY_EXISTS)", pass, now.StagingPath)
		}
	}
}
