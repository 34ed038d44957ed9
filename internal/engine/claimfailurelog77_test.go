package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestStuckClaimsFailureIsRecordedAgainOnceTheLogDroppedIt: a claim left for reconcile records
// its failure as one event, and each pass that meets the same failure records none
// (recordFailure's repeat). The repeat is judged against the claim's own last_error, not the
// log: once a busy host has pushed that one event out of the log (it keeps the newest
// store.DefaultEventLimit), every later pass still fails the claim the same way and records
// nothing, so `volctl events --volume v` shows no failure at all for a claim that fails every
// pass, and `events --follow` never prints it. A volume's failures (appendFailure) are compared
// with the log's own events and recorded again once their event is gone; a claim's should be
// too. Correct: a pass that meets a claim failure whose event the log no longer holds records it
// again (one event, not one per pass).
// Found by helper review77 (metrics).
func TestStuckClaimsFailureIsRecordedAgainOnceTheLogDroppedIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	const msg = "backend busy"
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Unavailable, Message: msg, Times: 1000})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("the claim passed a failing NodeStageVolume")
	}
	failures := func() int {
		t.Helper()
		evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "v", Kind: "claim"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.RPC == csi.RPCNodeStageVolume && strings.Contains(ev.Message, msg) {
				n++
			}
		}
		return n
	}
	if n := failures(); n != 1 {
		t.Fatalf("precondition: %d failure events of the claim after the claim, want 1", n)
	}

	// A busy host: another process records as many events as the log keeps, which drops the
	// claim's failure event, as the log drops its oldest.
	s, err := store.Open(context.Background(), h.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(h.ctx, func(tx *store.Tx) error {
		for i := range store.DefaultEventLimit {
			if err := tx.Events().Append(&store.Event{Kind: "plugin-health", PluginID: "other", Message: fmt.Sprintf("busy %d", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := failures(); n != 0 {
		t.Fatalf("precondition: the log still holds %d failure events of the claim after %d others", n, store.DefaultEventLimit)
	}

	// The claim still fails, pass after pass.
	for range 2 {
		if rep, err := h.e.Reconcile(h.ctx); err == nil || rep.OK() {
			t.Fatalf("a pass with NodeStageVolume failing: %v, %+v", err, rep)
		}
	}
	live := h.liveClaims("v")
	if len(live) != 1 {
		t.Fatalf("precondition: %d live claims of v, want 1", len(live))
	}
	cl := live[0]
	if !cl.NeedsReconcile || !strings.Contains(cl.LastError, msg) {
		t.Fatalf("precondition: the claim is not stuck on the failure: %+v", cl)
	}
	if n := failures(); n != 1 {
		t.Errorf("two passes failed claim v/a at NodeStageVolume (%q) after the log dropped its failure event; "+
			"the log now holds %d failure events of it, want 1: `volctl events --volume v` shows a claim that fails every pass as never failing", cl.LastError, n)
	}
}
