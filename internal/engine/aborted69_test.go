package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A claim's first ControllerPublishVolume is answered ABORTED: the CSI spec's "an operation is
// already pending for the volume", another orchestrator attaching it to the same node at that
// moment (the plugin listed it attached to no node a moment before, attachedAlready). The
// plugin did nothing for this request and said so; its answer was read, not lost. The retry is
// answered ALREADY_EXISTS: the other orchestrator's attachment, made with another capability,
// now stands. volctl took the ABORTED attempt for one "whose answer was lost"
// (sendAnswered's earlier counted every attempt sent, whatever it answered), so
// lostAttachRefused claimed the attachment for this claim, and the rollback sent
// ControllerUnpublishVolume: the other orchestrator's attachment, possibly in use, detached from
// under it, and the error told the user the attachment was the claim's own. Found by helper
// review69.
func TestAbortedThenAlreadyExistsLeavesTheOtherAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter), capab(spec.SingleNodeReaderOnly)))
	ext := h.externalID("v")

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCControllerPublishVolume, csitest.Fault{Code: codes.Aborted, Gate: gate, Times: 1,
		Message: "an operation is pending for volume " + ext})

	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
		done <- result{err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for h.faults.Held() == 0 {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("the claim's ControllerPublishVolume never reached the plugin")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The other orchestrator's attachment, whose operation the ABORTED answer was about.
	if err := otherOrchestratorAttaches(t, h, ext); err != nil {
		close(gate)
		t.Fatalf("the other orchestrator's attach: %v", err)
	}
	close(gate)
	var err error
	select {
	case r := <-done:
		err = r.err
	case <-time.After(30 * time.Second):
		t.Fatal("the claim did not return")
	}
	if err == nil {
		t.Fatal("the claim passed a ControllerPublishVolume answered ALREADY_EXISTS")
	}
	nodes := h.mem.PublishedNodes(ext)
	unpublished := h.faults.Calls(csi.RPCControllerUnpublishVolume)
	if len(nodes) != 1 || unpublished != 0 {
		t.Errorf("after the claim refused ALREADY_EXISTS (its only earlier attempt answered ABORTED, having done nothing): "+
			"the plugin has the volume attached to %v, ControllerUnpublishVolume sent %d times; want the other orchestrator's attachment left as it is", nodes, unpublished)
	}
	if strings.Contains(err.Error(), "answer was lost") || strings.Contains(err.Error(), "the attachment is that attempt's") {
		t.Errorf("the error says an earlier attempt's answer was lost, where it answered ABORTED: %v", err)
	}
}

// The same where the pending operation outlasts the claim's attempts: every
// ControllerPublishVolume of the claim is answered ABORTED (the other orchestrator's attach still
// in progress), so the claim is left for reconcile with its attach intent recorded; by the
// reconcile pass the other orchestrator's attachment stands, with another capability, and the
// re-driven ControllerPublishVolume is answered ALREADY_EXISTS. No attempt of volctl's ever did
// anything (each was answered ABORTED), yet the pass took the recorded intent for an attachment
// of its own and its rollback detached the other orchestrator's: the claim now withdraws its
// intent when every attempt answered ABORTED. Found by helper review69.
func TestAbortedAtEveryAttemptThenAlreadyExistsAtReconcileLeavesTheOtherAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter), capab(spec.SingleNodeReaderOnly)))
	ext := h.externalID("v")
	h.faults.Inject(csi.RPCControllerPublishVolume, csitest.Fault{Code: codes.Aborted, Times: fastRetry.Attempts,
		Message: "an operation is pending for volume " + ext})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("the claim passed ControllerPublishVolume answered ABORTED at every attempt")
	}
	if n := h.mem.PublishedNodes(ext); len(n) != 0 {
		t.Fatalf("the plugin has the volume attached to %v after only ABORTED answers", n)
	}
	if err := otherOrchestratorAttaches(t, h, ext); err != nil {
		t.Fatalf("the other orchestrator's attach: %v", err)
	}
	h.faults.ResetCounts()
	rep, err := h.e.Reconcile(h.ctx)
	nodes := h.mem.PublishedNodes(ext)
	unpublished := h.faults.Calls(csi.RPCControllerUnpublishVolume)
	if len(nodes) != 1 || unpublished != 0 {
		t.Errorf("after reconcile (err %v, problems %+v): the plugin has the volume attached to %v, ControllerUnpublishVolume sent %d times; "+
			"want the other orchestrator's attachment left as it is: no ControllerPublishVolume of volctl's did anything", err, rep.Problems, nodes, unpublished)
	}
}

// otherOrchestratorAttaches attaches storage ext to the harness's node through a client of its
// own, with a reader's capability, as another orchestrator sharing the plugin would.
func otherOrchestratorAttaches(t *testing.T, h *harness, ext string) error {
	t.Helper()
	other := csitest.NewClient(t, csi.Config{ControllerSocket: h.socket, NodeSocket: h.socket, Name: "other-co",
		Timeouts: csi.Timeouts{Short: 5 * time.Second, Long: 5 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := other.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{
		VolumeID: ext, NodeID: "node-1",
		Capability: csi.VolumeCapability{Capability: capab(spec.SingleNodeReaderOnly)},
		Secrets:    spec.Secrets{"token": "s3cr3t"},
	})
	return err
}
