package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin restarted between commands with another NodeGetInfo node_id: the next claim's
// admission records its attach intent from the fingerprint taken before the restart, and the
// claim then attaches the volume to the node the plugin reports now. The record must name that
// node, or the release detaches the old one and the attachment is forgotten, left attached
// for good. No ControllerUnpublishVolume goes to the old node for an intent nothing was sent
// for.
func TestClaimAfterNodeIDChangeRecordsTheNodeItAttached(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.stopServe()
	h.mem.SetNodeID("node-2")
	h.serveAgain(t)
	h.mem.ResetCalls()

	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-2"}) {
		t.Fatalf("attached to %v, want node-2", nodes)
	}
	if st, _ := h.staging("v"); st.NodeID != "node-2" {
		t.Errorf("the staging records the attachment to node %q, want node-2, where it was attached", st.NodeID)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("ControllerUnpublishVolume sent %d times for an intent nothing was sent for", n)
	}
	h.release("v", "a")
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %v after the release: the attachment was forgotten", nodes)
	}
}

// The same change after an attempt that may have attached the volume to the old node (its
// ControllerPublishVolume answer was lost): the re-drive detaches the old node first, as the
// release would, then attaches the node the plugin reports now and records it. Nothing is
// left attached once the claim is released.
func TestRedriveAfterNodeIDChangeDetachesTheRecordedNode(t *testing.T) {
	t.Parallel()
	h := claimWithThePublishAnswerLost(t)
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-1"}) {
		t.Fatalf("attached to %v after the lost answer, want node-1", nodes)
	}

	h.stopServe()
	h.mem.SetNodeID("node-2")
	h.serveAgain(t)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile = %+v, %v", rep, err)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-2"}) {
		t.Fatalf("attached to %v after the re-drive, want node-2 only", nodes)
	}
	if st, _ := h.staging("v"); st.NodeID != "node-2" {
		t.Errorf("the staging records node %q, want node-2", st.NodeID)
	}
	h.release("v", "a")
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %v after the release", nodes)
	}
}

// The same re-drive of a volume handed over to Nomad meanwhile (forced, the claim still there,
// as a volctl before TestForcedHandoverRefusesClaimsHoldingAnAttachment did):
// the attachment recorded to the old node may be Nomad's allocations' now, and volctl never
// sends ControllerUnpublishVolume for a handed-over volume. The claim goes no further, the
// attachment stays recorded, and it is undone once the volume is taken back.
func TestRedriveAfterNodeIDChangeOfAHandedOverVolumeKeepsTheAttachment(t *testing.T) {
	t.Parallel()
	h := claimWithThePublishAnswerLost(t)
	markForcedAsBefore(t, h, "v", HandoverTarget{Address: "http://127.0.0.1:4646"})

	h.stopServe()
	h.mem.SetNodeID("node-2")
	h.serveAgain(t)
	h.mem.ResetCalls()
	rep, _ := h.e.Reconcile(h.ctx)
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Fatalf("ControllerUnpublishVolume sent %d time(s) for a volume handed over to Nomad (reconcile: %+v)", n, rep)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Contains(nodes, "node-1") {
		t.Fatalf("attached to %v, want node-1's attachment kept for Nomad", nodes)
	}
	if st, _ := h.staging("v"); !st.ControllerPublished || st.NodeID != "node-1" {
		t.Errorf("the staging records %+v, want the attachment to node-1 kept", st)
	}
	// The claim waits, reported on each pass, naming the handover and the take-back.
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "handed over to Nomad at http://127.0.0.1:4646") ||
		!strings.Contains(rep.Problems[0].Message, "volctl nomad release v") {
		t.Errorf("reconcile problems = %+v, want one naming the handover and `volctl nomad release v`", rep.Problems)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Errorf("live claims = %+v, want the claim kept for a later pass", live)
	}
}

// claimWithThePublishAnswerLost claims volume "v" for alloc "a" through a plugin whose first
// ControllerPublishVolume attaches the volume (to node-1) but whose answer is lost: the claim
// fails and is left for reconcile, its attachment recorded.
func claimWithThePublishAnswerLost(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("v"))
	var lost atomic.Bool
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			if filepath.Base(info.FullMethod) == csi.RPCControllerPublishVolume && err == nil && lost.CompareAndSwap(false, true) {
				return nil, status.Error(codes.Unavailable, "connection lost")
			}
			return resp, err
		}))
	h.open(Config{Retry: RetryPolicy{Attempts: 1}})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with the ControllerPublishVolume answer lost succeeded")
	}
	return h
}
