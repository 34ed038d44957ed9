package engine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExpandDoesNotSendNodeExpandAtACoveredTarget: a published claim's target has had a tmpfs
// mounted over it since its publish (the case targetCovered, new with migration 0033, reports
// in reconcile and refuses on a claim again). A `volume expand` answered
// node_expansion_required then sends NodeExpandVolume naming that target: the path shows the
// tmpfs, not the volume, so a plugin growing the file system it finds there grows the cover's
// (or fails on it), and its OK clears the debt; the command exits 0 saying the volume expanded
// while the volume's own file system was never grown, and no later publish or reconcile pays
// it. expandOnNode skips a target that is not mounted (a bare directory after a reboot) for the
// same reason; a target whose recorded mount is covered is no better. Correct behaviour: no
// NodeExpandVolume at a covered target (sent at the staging, or the debt kept owed and the
// cover named, as reconcile names it). The debt is kept and the cover named; the test follows
// the advice. Found by helper review75.
func TestExpandDoesNotSendNodeExpandAtACoveredTarget(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	h.mem.ResetCalls()

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	for _, r := range h.nodeExpands() {
		if r.VolumePath == cl.TargetPath {
			t.Fatalf("`volume expand` sent NodeExpandVolume at %s, whose recorded mount a tmpfs covers (expand: %v; node expansion still owed: %d bytes): "+
				"the file system found there is the cover's, not the volume's, and the plugin's OK cleared the debt; "+
				"want no NodeExpandVolume at a covered target", cl.TargetPath, err, h.owed("v"))
		}
	}
	if err == nil || !strings.Contains(err.Error(), cl.TargetPath) || !strings.Contains(err.Error(), "umount") || h.owed("v") != 4*mib {
		t.Fatalf("expand with the target covered: %v, owed %d; want it failing naming the cover and its umount, the node step to 4MiB owed", err, h.owed("v"))
	}
	// As advised: the cover unmounted, reconcile pays the debt at the target.
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("umount the tmpfs, as advised: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("the advised reconcile: %v %+v", err, rep.Problems)
	}
	sent := false
	for _, r := range h.nodeExpands() {
		sent = sent || r.VolumePath == cl.TargetPath
	}
	if !sent || h.owed("v") != 0 {
		t.Fatalf("after the advice: NodeExpandVolume at the target sent %v, owed %d; want it sent and the debt paid", sent, h.owed("v"))
	}
}
