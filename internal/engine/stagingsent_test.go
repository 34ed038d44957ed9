package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// checkNotDetachedUnderStaging checks that volume v, if controller-unpublished, was unstaged
// at the plugin first: ControllerUnpublishVolume never sent while the plugin still holds the
// volume staged (its own link at the staging path the staging).
func checkNotDetachedUnderStaging(t *testing.T, h *harness, what string) {
	t.Helper()
	staged, isStaged := h.mem.StagingPath(h.externalID("v"))
	if isStaged && h.faults.Calls(csi.RPCControllerUnpublishVolume) > 0 {
		t.Errorf("%s: ControllerUnpublishVolume sent %d times while the plugin still holds volume \"v\" staged at %s (NodeUnstageVolume sent %d times); "+
			"want the volume never detached under the plugin's staging",
			what, h.faults.Calls(csi.RPCControllerUnpublishVolume), staged, h.faults.Calls(csi.RPCNodeUnstageVolume))
	}
	if isStaged {
		if st, ok := h.staging("v"); !ok || st.StagingPath == "" {
			t.Errorf("%s: the plugin holds volume \"v\" staged at %s, but volctl's staging row = %+v (%v); want the staging recorded, owed an unstage", what, staged, st, ok)
		}
	}
}

// (a) NodeStageVolume reaches a plugin that stages by linking its staging path, but every
// answer is lost as UNAVAILABLE: the claim is left controller-published, its record holding
// UNAVAILABLE, not a cut-off. Reconcile took the plugin's link for a hand's (the record's
// failure "not a NodeStageVolume cut off"), dropped the staging path, and rolled back with
// ControllerUnpublishVolume and no NodeUnstageVolume: the volume detached under the plugin's
// live staging. The link is taken for the plugin's (a staging recorded: a NodeStageVolume may
// have reached it): the rollback unstages through the plugin first.
func TestLinkAfterALostStageAnswerIsNotDetachedUnder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeStaging = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodeStageVolume answer lost succeeded")
	}
	h.faults.Clear()
	h.faults.ResetCounts()
	rep, _ := h.e.Reconcile(h.ctx)
	checkNotDetachedUnderStaging(t, h, "reconcile after a NodeStageVolume answered UNAVAILABLE after the plugin linked its staging")
	for _, p := range rep.Problems {
		if strings.Contains(p.Message, "by hand or by another program") && !strings.Contains(p.Message, "may have reached") {
			t.Errorf("reconcile blamed a hand for the plugin's link: %s", p.Message)
		}
	}
	h.e.Reconcile(h.ctx)
	checkNotDetachedUnderStaging(t, h, "a second reconcile")
}

// (b) A stage cut off (DeadlineExceeded) after the plugin linked its staging, then a reconcile
// pass finding the plugin's socket gone overwrites the claim's record ("a failure met before
// it was sent"), then the plugin back: the next pass took the link for a hand's and detached
// the volume under the plugin's staging.
func TestLinkAfterACutOffStageAndAGoneSocketIsNotDetachedUnder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeStaging = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Code: codes.DeadlineExceeded, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodeStageVolume cut off succeeded")
	}
	h.faults.Clear()
	h.reconcileWithSocketGone(csi.RPCNodeStageVolume)
	h.faults.ResetCounts()
	h.e.Reconcile(h.ctx)
	checkNotDetachedUnderStaging(t, h, "reconcile after a cut-off NodeStageVolume and a pass with the socket gone")
}

// (c) multi-node-multi-writer: a's NodeStageVolume cut off after the plugin linked its
// staging (a left controller-published), then b claims before any reconcile and finds a's
// link: a counted as no staging user, b dropped the staging path, and its rollback... the
// volume stays attached for a, but the staging is forgotten: b's claim must not drop it.
func TestLinkOfAnotherClaimsCutOffStageIsKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeStaging = linkPathTo(t.TempDir()) })
	h.create(volume("v", spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}))
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Code: codes.DeadlineExceeded, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodeStageVolume cut off succeeded")
	}
	h.faults.Clear()
	h.faults.ResetCounts()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if err == nil {
		t.Fatal("b's claim through the plugin's link succeeded")
	}
	if errors.Is(err, ErrConflict) {
		t.Errorf("b's claim = %v\nwant it not blamed on a hand: the link may be the plugin's answer to a's NodeStageVolume", err)
	}
	checkNotDetachedUnderStaging(t, h, "b's claim finding a's cut-off staging link")
	h.e.Reconcile(h.ctx)
	checkNotDetachedUnderStaging(t, h, "reconcile after b's claim")
}

// #2: the rollback of checkStaging's refusal cancelled while its NodeUnstageVolume is held
// (the claim left releasing at node-detached), then resumed by reconcile: the resumed release
// took the plugin's link for a hand's (its record's start state no longer controller-published),
// removed it unfollowed before NodeUnstageVolume and blamed a hand (a target-link-removed
// event). The link at a staging recorded but never accepted is the plugin's to remove,
// whatever state the release resumes from.
func TestResumedRollbackLeavesThePluginsStagingLink(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeStaging = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	gate := make(chan struct{})
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	h.faults.Inject(csi.RPCNodeUnstageVolume, csitest.Fault{Gate: gate, Times: 1})
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { _, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); done <- err }()
	for deadline := time.Now().Add(10 * time.Second); h.faults.Held() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("no NodeUnstageVolume was held at the plugin")
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("claim cancelled in its rollback succeeded")
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims after the cancelled rollback = %+v; want a's, releasing", live)
	}
	h.faults.Clear()
	h.faults.ResetCounts()
	h.e.Reconcile(h.ctx)
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "target-link-removed", VolumeID: "v"})
	if err != nil || len(evs) != 0 {
		t.Errorf("target-link-removed events = %+v, %v; want none: the link at the staging path was the plugin's, not a hand's", evs, err)
	}
	if n := h.faults.Calls(csi.RPCNodeUnstageVolume); n == 0 {
		t.Errorf("the resumed rollback sent no NodeUnstageVolume")
	}
	checkNotDetachedUnderStaging(t, h, "the resumed rollback")
	if sp, ok := h.mem.StagingPath(h.externalID("v")); ok {
		t.Errorf("the plugin still holds volume \"v\" staged at %s after the resumed rollback; want it unstaged through the plugin", sp)
	}
}
