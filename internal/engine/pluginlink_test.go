package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"google.golang.org/grpc/codes"
)

// A plugin whose NodePublishVolume made the target a symlink (to its own mount elsewhere, or a
// block device) has the claim refused by checkTarget and rolled back, and the rollback's
// NodeUnpublishVolume is the plugin's chance to remove what it made. volctl removed the link
// first (unlinkBeforeTeardown, meant for a link put by hand in place of a published target),
// so the plugin found the target gone, answered OK, and never cleaned up what its link led to;
// the target-link-removed event blamed "a hand or a program". A target never recorded
// published is left to the plugin: NodeUnpublishVolume finds its link there, and no event
// blames anyone (TestReleaseRemovesASymlinkPutInPlaceOfTheTargetBeforeNodeUnpublish keeps the
// link put in place of a published target removed unfollowed).
func TestRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir() // the plugin's own mount, say
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.MakeTarget = func(target string) error { return os.Symlink(elsewhere, target) }
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}))
	target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	go func() { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); done <- err }()
	h.waitInFlight(gate, done)
	fi, lerr := os.Lstat(target)
	close(gate)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim with the target made a symlink = %v, want it refused and rolled back", err)
	}
	checkPluginsLinkLeft(t, h, "rollback", target, fi, lerr)
}

// checkPluginsLinkLeft checks what a rollback (what) of volume v's claim at target did with the
// plugin's own link there: found there by its NodeUnpublishVolume (fi, lerr: the target's
// Lstat while the RPC was held), no target-link-removed event, the target gone, no claim left.
func checkPluginsLinkLeft(t *testing.T, h *harness, what, target string, fi os.FileInfo, lerr error) {
	t.Helper()
	if lerr != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the %s's NodeUnpublishVolume sent, the plugin's own link at the target then: %v, %v; want it there: volctl removed what the plugin made before asking it to remove it", what, fi, lerr)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "target-link-removed", VolumeID: "v"})
	if err != nil || len(evs) != 0 {
		t.Errorf("target-link-removed events = %+v, %v; want none: the link was the plugin's, not a hand's or a program's", evs, err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("target after the %s: %v, want it gone", what, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the %s = %+v, want none", what, live)
	}
}

// A rollback whose NodeUnpublishVolume failed (UNAVAILABLE past the retries) is left
// unpublishing, releasing, for reconcile; the reconcile that resumes it did not know that the
// target was never accepted (the state says unpublishing either way) and removed the plugin's
// own link before NodeUnpublishVolume, blaming "a hand or a program", where the rollback uncut
// leaves it to the plugin (TestRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish). The claim
// records whether its target was accepted (store.Claim.Target): the resumed rollback does what
// the uncut one does.
func TestResumedRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.MakeTarget = func(target string) error { return os.Symlink(elsewhere, target) }
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}))
	target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), "rolling the claim back also failed") {
		t.Fatalf("claim with the target made a symlink and NodeUnpublishVolume unavailable = %v, want the rollback left for reconcile", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimUnpublishing || !live[0].Releasing {
		t.Fatalf("claims after the rollback cut short = %+v, want one unpublishing, releasing", live)
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	go func() { _, err := h.e.Reconcile(h.ctx); done <- err }()
	h.waitInFlight(gate, done)
	fi, lerr := os.Lstat(target)
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkPluginsLinkLeft(t, h, "resumed rollback", target, fi, lerr)
}
