package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// After a reboot, reconcile restores a published claim; the plugin answers NodePublishVolume
// OK but mounts the wrong thing at the target, which checkTarget refuses (errBadAnswer). A new
// claim so refused is rolled back, and the rollback's NodeUnpublishVolume removes what the
// plugin mounted; a claim being restored is held, degraded, instead (its alloc may be using the
// volume). Before, nothing removed that mount: it stayed at the claim's target, the path the
// alloc restarted after the reboot is given, pass after pass, and the alloc read and wrote what
// the check refused: another volume's data, or the host's disk under the bare staging
// directory. The refusal takes it away again (undoRefusedRestore), and says so.
func TestARefusedRestoreTakesTheRefusedMountAway(t *testing.T) {
	t.Parallel()
	t.Run("another volume's target bound there", func(t *testing.T) {
		h, v, _ := wBoundAtVsTargetAfterAReboot(t)
		for pass := 1; pass <= 2; pass++ {
			rep, err := h.e.Reconcile(h.ctx)
			if err == nil || !strings.Contains(fmt.Sprint(rep.Problems), `volume "w"'s target`) || !strings.Contains(fmt.Sprint(rep.Problems), "NodeUnpublishVolume took it away") {
				t.Fatalf("pass %d: reconcile = %v, problems %v; want the restore refused for binding w's target, and the bind taken away", pass, err, rep.Problems)
			}
			if cl := h.liveClaims("v"); len(cl) != 1 || !cl[0].Degraded {
				t.Fatalf("pass %d: v's claims %+v, want alloc a's held, degraded", pass, cl)
			}
			if seen, err := os.ReadFile(filepath.Join(v.TargetPath, "ws-data")); err == nil {
				t.Fatalf("after reconcile pass %d refused v's restore (claim held degraded, %s), v's target %s is still the plugin's bind of volume w's target: "+
					"alloc \"a\", holding only volume v, reads %q and can write w's data there; the refused mount was not undone (no NodeUnpublishVolume, as a rollback sends)",
					pass, h.liveClaims("v")[0].State, v.TargetPath, seen)
			}
		}
	})
	t.Run("the bare staging directory bound there", func(t *testing.T) {
		h := kernelHarness(t, nil)
		h.create(volume("v"))
		cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		staging := stagingPath(h.dir, "mem", "v")
		for _, p := range []string{cl.TargetPath, staging} { // a reboot
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				t.Fatal(err)
			}
		}
		// The plugin comes back answering NodeStageVolume OK and mounting nothing.
		h.stopServe()
		cfg := csitest.DefaultMemConfig()
		cfg.NodeID, cfg.MountRoot, cfg.StageNothing = "node-1", t.TempDir(), true
		p := csitest.NewMemPlugin(cfg)
		p.AddVolume(csi.Volume{ID: h.externalID("v")})
		t.Cleanup(func() { _ = p.UnmountAll() })
		h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(p))
		rep, err := h.e.Reconcile(h.ctx)
		if err == nil || !strings.Contains(fmt.Sprint(rep.Problems), "where nothing is mounted") || !strings.Contains(fmt.Sprint(rep.Problems), "NodeUnpublishVolume took it away") {
			t.Fatalf("reconcile = %v, problems %v; want the restore refused for a bind of the bare staging path", err, rep.Problems)
		}
		if hostpathtest.Mounted(t, cl.TargetPath) {
			werr := os.WriteFile(filepath.Join(cl.TargetPath, "app-data"), []byte("x"), 0o600)
			_, serr := os.Stat(filepath.Join(staging, "app-data"))
			t.Fatalf("after reconcile refused the restore (\"the claim would write to the host's disk\"), the target %s is still the plugin's bind of the bare staging directory %s: "+
				"a write through it (%v) lands in the staging directory on the state dir's disk (found there: %v); the refused mount was not undone",
				cl.TargetPath, staging, werr, serr == nil)
		}
	})
}
