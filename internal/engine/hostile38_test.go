package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin answers NodeUnstageVolume OK and leaves the staging mounted (its unmount failed
// quietly, or it logged out of the device under a file system still mounted on it): the
// release stops there, left for reconcile, as TestReleaseKeepsWhatThePluginLeftMounted holds.
// Meanwhile another alloc claims the (multi-writer) volume. The plugin has said the volume is
// unstaged, so what is mounted at the staging path is no staging of its: the new claim must not
// be published from it. Before, the staging row still said staged, and the claim sent
// NodePublishVolume from the mount the plugin had disowned (a plugin that binds the staging
// path without looking would hand the alloc a file system on a device it had let go; this one
// refused, "not staged", and the rollback failed on the same mount). Now the claim stages anew,
// finds the mount left (unstageUnrecorded), and stops naming it, with no NodePublishVolume
// sent; once it is unmounted, reconcile finishes the release and publishes the claim from a
// staging the plugin made again.
func TestClaimAfterNodeUnstageAnsweredOKIsNotPublishedFromTheMountLeft(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a", AccessMode: spec.MultiNodeMultiWriter})
	staging, _ := h.staging("v")
	heal := h.serveLeavingMounts(csi.RPCNodeUnstageVolume)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil || !strings.Contains(err.Error(), "still mounted") {
		t.Fatalf("release through a plugin that leaves the staging mounted = %v, want it left for reconcile", err)
	}
	h.faults.ResetCounts()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b", AccessMode: spec.MultiNodeMultiWriter})
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 0 {
		t.Fatalf("NodePublishVolume sent %d time(s) from the staging at %s, which the plugin had answered NodeUnstageVolume OK for (claim: %v)", n, staging.StagingPath, err)
	}
	if err == nil || !strings.Contains(err.Error(), staging.StagingPath) || !strings.Contains(err.Error(), "still mounted") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("claim over a staging mount the plugin disowned = %v, want an error naming %s still mounted and reconcile", err, staging.StagingPath)
	}

	// Unmounted by hand: reconcile finishes a's release and publishes b, staged anew.
	heal()
	h.faults.ResetCounts()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the staging is unmounted: %v", err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].Alloc != "b" || !live[0].AtRest() {
		t.Fatalf("claims after reconcile = %+v, want b's alone, published", live)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != 1 {
		t.Errorf("NodeStageVolume sent %d time(s) by reconcile, want once: b is published from a staging the plugin made again", n)
	}
	if at, ok := h.mem.StagingPath(h.externalID("v")); !ok || at != staging.StagingPath {
		t.Errorf("plugin's staging of v = %q (%v), want it staged at %s", at, ok, staging.StagingPath)
	}
	h.release("v", "b")
}

// The honest case beside it: a multi-writer volume's claim released while another claim is
// published from the same staging leaves the staging as it is (no NodeUnstageVolume), and a
// third claim is published from it without staging it again.
func TestClaimJoiningAStagingAfterAnotherClaimsReleaseIsPublishedFromIt(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	for _, alloc := range []string{"a", "b"} {
		h.claim(ClaimRequest{VolumeID: "v", Alloc: alloc, AccessMode: spec.MultiNodeMultiWriter})
	}
	h.release("v", "a")
	h.faults.ResetCounts()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "c", AccessMode: spec.MultiNodeMultiWriter})
	if n, m := h.faults.Calls(csi.RPCNodeStageVolume), h.faults.Calls(csi.RPCNodeUnstageVolume); n != 0 || m != 0 {
		t.Errorf("NodeStageVolume sent %d time(s), NodeUnstageVolume %d, joining a staging b is published from; want none", n, m)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 1 {
		t.Errorf("NodePublishVolume sent %d time(s), want once", n)
	}
	h.release("v", "b")
	h.release("v", "c")
	if _, ok := h.staging("v"); ok {
		t.Errorf("staging of v recorded after every claim was released")
	}
}
