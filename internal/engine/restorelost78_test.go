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
)

// TestRestoreOfALostTargetThroughAPluginThatRemembersItsPublishTakesOnePass: claim a's
// published target lost its mount (unmounted by hand). The plugin keeps its own record of what
// it published (as the CSI host-path driver keeps its state) and answers the restore's
// NodePublishVolume OK from it, mounting nothing. volctl refused that answer and took it back
// with NodeUnpublishVolume, which made the plugin forget it, and the pass ended there: exit 1,
// the claim held degraded until a second reconcile mounted the volume, where the views' advice
// ("`volctl reconcile` mounts the volume there again") promised one. Correct: the restore asks
// once more in the same pass, and the volume is at the target, the volume's data there.
// Found by the own review of the status summary's lost target (status summary test).
func TestRestoreOfALostTargetThroughAPluginThatRemembersItsPublishTakesOnePass(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "volume-data"), []byte("the volume's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("unmount %s: %v", cl.TargetPath, err)
	}
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "v", "a") })
	h.mem.ResetCalls()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile with claim a's target lost, through a plugin that remembers its publish: %v, problems %v; want the volume mounted there again in one pass", err, rep.Problems)
	}
	if b, err := os.ReadFile(filepath.Join(cl.TargetPath, "volume-data")); err != nil || string(b) != "the volume's" {
		t.Fatalf("after the reconcile the target %s shows %q (%v), want the volume's file", cl.TargetPath, b, err)
	}
	if got := h.liveClaims("v"); len(got) != 1 || got[0].Degraded || got[0].State != "published" {
		t.Fatalf("after the reconcile claim a is %+v, want published, not degraded", got)
	}
	if n, u := h.mem.CallCount(csi.RPCNodePublishVolume), h.mem.CallCount(csi.RPCNodeUnpublishVolume); n != 2 || u != 1 {
		t.Errorf("the pass sent NodePublishVolume %d times and NodeUnpublishVolume %d times; want 2 and 1: the remembered OK taken back, then asked once more", n, u)
	}
}

// TestRestoreThroughAPluginThatNeverMountsAsksOnceMorePerPassOnly: a plugin that answers every
// NodePublishVolume OK and never mounts anything at the target is asked once more in a pass
// (TestRestoreOfALostTargetThroughAPluginThatRemembersItsPublishTakesOnePass), not again and
// again: each pass sends two, takes each back, and holds the claim, degraded, saying why.
func TestRestoreThroughAPluginThatNeverMountsAsksOnceMorePerPassOnly(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("unmount %s: %v", cl.TargetPath, err)
	}
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "v", "a") })
	// The plugin comes back making the target and mounting nothing there.
	h.restartWith(func(c *csitest.MemConfig) {
		c.MakeTarget = func(target string) error { return os.Mkdir(target, 0o750) }
	})
	for pass := 1; pass <= 2; pass++ {
		h.mem.ResetCalls()
		rep, err := h.e.Reconcile(h.ctx)
		if err == nil || !strings.Contains(fmt.Sprint(rep.Problems), "not a mount point") {
			t.Fatalf("pass %d: reconcile = %v, problems %v; want the restore refused: nothing mounted at the target", pass, err, rep.Problems)
		}
		if n := h.mem.CallCount(csi.RPCNodePublishVolume); n != 2 {
			t.Errorf("pass %d sent NodePublishVolume %d times; want 2 (once more after the first was taken back, no more)", pass, n)
		}
		if got := h.liveClaims("v"); len(got) != 1 || !got[0].Degraded {
			t.Fatalf("pass %d: claim a is %+v, want held, degraded", pass, got)
		}
	}
}
