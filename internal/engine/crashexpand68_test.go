package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Volume v is published for web-0 and web-1 (multi-node). `volume expand v --size 4MiB` is
// killed once web-0's target answered NodeExpandVolume, before web-1's is sent: the debt
// (node_expand_min) stays recorded, as it must, since "the debt is cleared when all succeeded".
// The next command is a claim of v for web-2: its publish paid the debt through
// expandOnPublish, which sent NodeExpandVolume at web-2's target alone and then cleared the
// whole debt (nodeExpanded). web-1's target never got its NodeExpandVolume: not from that
// claim, not from reconcile after it (nothing was owed any more), not from the same expand run
// again (it found the size, nothing owed). Its alloc kept the old file-system size for good,
// with volctl saying the volume was expanded. The same after any failure of one target
// (TestNodeExpandFailingForOneClaimStillSendsItToTheOthers's refused target): the next publish
// cleared the debt the refusal kept. Found by helper review68 (crash).
func TestExpandKilledBetweenTwoTargetsThenAClaimClearsNoDebtUnsent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-1"})
	targets := map[string]string{}
	for _, cl := range h.liveClaims("v") {
		targets[cl.Alloc] = cl.TargetPath
	}
	h.mem.ResetCalls()
	if !cutShortAt(h, "rpc:NodeExpandVolume", 1, func() { h.e.ExpandVolume(h.ctx, "v", 4*mib, 0) }) {
		t.Fatal("the expand never reached its first NodeExpandVolume answer")
	}
	h.open(h.e.cfg) // the next volctl
	var first string
	for _, r := range csitest.Requests[csi.NodeExpandVolumeRequest](h.mem) {
		first = r.VolumePath
	}
	other := targets["web-1"]
	if first == other {
		other = targets["web-0"]
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Fatalf("setup: after the kill, node expansion owed %s; want 4MiB", spec.FormatSize(v.NodeExpansionOwed))
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-2"})
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Logf("the same expand again: %v", err)
	}
	var sent []string
	for _, r := range csitest.Requests[csi.NodeExpandVolumeRequest](h.mem) {
		sent = append(sent, r.VolumePath)
	}
	if !slices.Contains(sent, other) {
		v := h.volumeInfo("v")
		t.Errorf("the expand was killed after %s took NodeExpandVolume; the claim of web-2 published since, then reconcile and the same expand ran: "+
			"node expansion owed now %s, and NodeExpandVolume was sent at %q, never at the still-published target %q, which the kill left unsent "+
			"(the docs: sent for each published claim at its target, the debt cleared when all succeeded)",
			first, spec.FormatSize(v.NodeExpansionOwed), sent, other)
	}
}
