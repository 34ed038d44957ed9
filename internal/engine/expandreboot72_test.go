package engine

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// nodeExpandsAt are the volume paths of the NodeExpandVolume requests the plugin received,
// in order, with the index in p.Calls() of each.
func nodeExpandsAt(p *csitest.MemPlugin) (paths []string, at []int) {
	for i, c := range p.Calls() {
		if r, ok := c.Request.(csi.NodeExpandVolumeRequest); ok {
			paths, at = append(paths, r.VolumePath), append(at, i)
		}
	}
	return paths, at
}

// TestExpandAfterARebootWaitsForTheRestore: after a reboot (the claim's target and the
// volume's staging no longer mounted, nothing restored yet), a `volume expand` answered
// node_expansion_required sent NodeExpandVolume naming the claim's target, a bare directory on
// the state dir's disk then (CSI: the volume is staged or published at those paths), and the
// answer cleared the debt, so the restore that mounted the volume again sent none: its file
// system stayed at the old size, recorded expanded. The debt now waits for the restore's
// publish, which pays it. Found by helper review72.
func TestExpandAfterARebootWaitsForTheRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	target := h.liveClaims("v")[0].TargetPath
	h.mem.AnswerNodeExpansionRequired(true)
	h.mem.ResetCalls()

	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand after a reboot: %v", err)
	}
	if paths, _ := nodeExpandsAt(h.mem); slices.Contains(paths, target) {
		t.Errorf("after a reboot, before any restore, `volume expand` sent NodeExpandVolume at %s, which is not mounted (NodeExpandVolume requests at %q); "+
			"want none sent there and the node expansion kept owed until the volume is published there again", target, paths)
	}
	owedAfterExpand := h.owed("v")

	h.mem.ResetCalls()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the reboot: %v", err)
	}
	paths, _ := nodeExpandsAt(h.mem)
	if !slices.Contains(paths, target) {
		t.Errorf("the restore of %s sent no NodeExpandVolume there (calls %v; the expand had left %d bytes owed): "+
			"the volume, mounted again, never had its file system grown to the 4 MiB recorded", target, h.rpcs(), owedAfterExpand)
	}
	if got := h.owed("v"); got != 0 {
		t.Errorf("after the restore the node expansion is still owed: %d", got)
	}
}

// TestRestoreExpandsOnlyWhatIsMountedAgain: a node expansion owed to a volume two allocs held,
// the host rebooted; reconcile restored the claims one after the other, and the first restore's
// publish paid the debt at every claim recorded published, the second's target too, not mounted
// yet: NodeExpandVolume sent at a bare directory before its NodePublishVolume. Found by helper
// review72.
func TestRestoreExpandsOnlyWhatIsMountedAgain(t *testing.T) {
	t.Parallel()
	h, _, _ := restoredOwingAnExpansion(t)
	published := map[string]int{} // target -> index of its NodePublishVolume in the calls
	for i, c := range h.mem.Calls() {
		if r, ok := c.Request.(csi.NodePublishVolumeRequest); ok {
			if _, seen := published[r.TargetPath]; !seen {
				published[r.TargetPath] = i
			}
		}
	}
	paths, at := nodeExpandsAt(h.mem)
	for k, p := range paths {
		pub, ok := published[p]
		if !ok || at[k] < pub {
			t.Errorf("NodeExpandVolume sent at %s (call %d) before its restore's NodePublishVolume (call %d, sent: %v): "+
				"the target was not mounted, after a reboot; calls %v", p, at[k], pub, ok, h.rpcs())
		}
	}
}

// TestRestoreOfTwoClaimsPaysTheDebtAtBoth: the fix of TestRestoreExpandsOnlyWhatIsMountedAgain as
// first made had the first restore send NodeExpandVolume at its own target alone (the other not
// mounted yet) and clear the debt, so the second claim's restore had nothing owed and its target
// never had it, at the old size where each target has its own device. The debt stays until a
// publish finds every published claim's target mounted. Found by helper review72 (own).
func TestRestoreOfTwoClaimsPaysTheDebtAtBoth(t *testing.T) {
	t.Parallel()
	h, a, b := restoredOwingAnExpansion(t)
	paths, _ := nodeExpandsAt(h.mem)
	for _, target := range []string{a.TargetPath, b.TargetPath} {
		if !slices.Contains(paths, target) {
			t.Errorf("after the reboot's restore of both claims, NodeExpandVolume was never sent at %s (sent at %q; owed now %d): "+
				"the first restore's publish sent it at the one target mounted and cleared the debt the other target was still owed", target, paths, h.owed("v"))
		}
	}
}

// TestExpandWithOneTargetLostKeepsItOwed: the same for `volume expand` with one of two targets'
// mounts lost (reconcile restores it): the debt was cleared with that target unsent. Found by
// helper review72 (own).
func TestExpandWithOneTargetLostKeepsItOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	b := h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	h.mounts.markGone(b.TargetPath)
	h.mem.AnswerNodeExpansionRequired(true)
	h.mem.ResetCalls()
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if paths, _ := nodeExpandsAt(h.mem); !slices.Contains(paths, b.TargetPath) {
		t.Errorf("b's target %s, unmounted at the expand and restored by reconcile after it, was never sent NodeExpandVolume (sent at %q, owed now %d): "+
			"the expand cleared the debt with a published claim's target unsent", b.TargetPath, paths, h.owed("v"))
	}
}

// restoredOwingAnExpansion makes volume v, held by allocs a and b, owed a node expansion (its
// NodeExpandVolume failed), then a reboot (every mount gone) and the reconcile that restores
// both claims, the plugin's calls recorded from the reboot on. It returns the harness and the
// two claims.
func restoredOwingAnExpansion(t *testing.T) (h *harness, a, b ClaimInfo) {
	t.Helper()
	h = newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a = h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	b = h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	h.mem.AnswerNodeExpansionRequired(true)
	h.faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand with NodeExpandVolume failing succeeded")
	}
	if h.owed("v") == 0 {
		t.Fatal("no node expansion owed after NodeExpandVolume failed")
	}
	h.faults.Clear(csi.RPCNodeExpandVolume)
	st, _ := h.staging("v")
	for _, p := range []string{a.TargetPath, b.TargetPath, st.StagingPath} {
		h.mounts.markGone(p)
	}
	h.mem.ResetCalls()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the reboot: %v", err)
	}
	return h, a, b
}
