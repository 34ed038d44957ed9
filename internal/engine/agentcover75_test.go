package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
)

// TestReleaseOfAClaimWhoseTargetIsCoveredLeavesTheCover: a published claim's target has a tmpfs
// mounted over it since (publishedUnderACover), and the alloc has written there (the cover),
// not to the volume. Reconcile reports it (targetCovered: "what it writes there is not on the
// volume; nothing was changed: unmount them ..., then run `volctl reconcile`"), but the release
// of that claim (`volume release`, a group stop, the agent's claim GC) never looks: it sends
// NodeUnpublishVolume over the cover, the plugin unmounts what is at the target (the cover
// first), the tmpfs and what the alloc wrote into it are gone, and the release says "released",
// exit 0. A staging is held to the same comparison before its teardown (unstageUncovered,
// TestReleaseOverACoveredStagingLeavesTheCover: "before, the plugin unmounted the cover"), and
// files written at a bare target are set aside before NodeUnpublishVolume (setAsideWritten).
// Correct: no NodeUnpublishVolume over a covered target; the release stops naming the target and
// the umount (the claim left for reconcile, which finishes it once the cover is gone), and the
// cover with what was written into it is left as it is.
// Found by helper review75.
func TestReleaseOfAClaimWhoseTargetIsCoveredLeavesTheCover(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	written := filepath.Join(cl.TargetPath, "written-by-the-alloc")
	if err := os.WriteFile(written, []byte("not on the volume"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.mem.ResetCalls()
	res, err := h.e.Release(h.ctx, "v", "a")
	_, serr := os.Stat(written)
	if serr != nil {
		t.Errorf("release of claim %q for alloc %q whose target %s is covered by a tmpfs = released %v, %v; NodeUnpublishVolume sent %d time(s) over the cover, "+
			"and what the alloc wrote into the cover is gone (%v); want the cover left, no NodeUnpublishVolume sent, and the umount named",
			cl.VolumeID, cl.Alloc, cl.TargetPath, res.Released, err, h.mem.CallCount(csi.RPCNodeUnpublishVolume), serr)
	}
	if err == nil || !strings.Contains(err.Error(), "umount") {
		t.Errorf("release over the covered target %s = released %v, %v; want it refused naming the cover's umount, the claim left for reconcile", cl.TargetPath, res.Released, err)
	}
	if serr != nil || err == nil {
		return
	}
	// The way out it names: the cover unmounted, then reconcile finishes the release.
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the cover was unmounted: %v %+v", err, rep.Problems)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims of v after the release was finished by reconcile: %+v", live)
	}
}
