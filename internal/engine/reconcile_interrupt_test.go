package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestReconcileInterruptedSaysSoOnce: a reconcile interrupted (^C, an agent stopping) while it
// restores mounts. Before, each item it had not got to yet was reported as a problem of its
// own ("waiting for the lock on volume ...: context canceled", "state ...: context canceled",
// one per claim, stagings, orphans), as if each had failed. Found by interrupting volctl
// processes at random. Now the pass stops at the interruption and its error says once that it
// was interrupted and to run it again; what it did is kept, and the next pass finishes.
func TestReconcileInterruptedSaysSoOnce(t *testing.T) {
	h := newHarness(t, nil)
	for _, v := range []string{"v1", "v2", "v3"} {
		h.claimThenReboot(v, "a-"+v, spec.SingleNodeWriter)
	}
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Gate: gate, Times: 1})
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	var rep ReconcileReport
	done := make(chan error, 1)
	go func() {
		var err error
		rep, err = h.e.Reconcile(ctx)
		done <- err
	}()
	h.waitInFlight(gate, done)
	cancel()
	close(gate)
	if err := <-done; err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") ||
		!strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("interrupted reconcile: %v; want one error saying it was interrupted", err)
	}
	for _, p := range rep.Problems {
		if strings.Contains(p.Message, "context canceled") {
			t.Errorf("problem reported for what the interruption cut short: %+v", p)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) == 0 {
		t.Fatalf("the next pass: %+v, %v; want it to finish the restores", rep, err)
	}
	for _, v := range []string{"v1", "v2", "v3"} {
		if live := h.liveClaims(v); len(live) != 1 || live[0].State != "published" {
			t.Fatalf("claims of %s after the next pass = %+v", v, live)
		}
	}
}

// TestInterruptedLockWaitSaysInterrupted: a command interrupted while it waits for another
// volctl's lock on the volume said "waiting for the lock on volume ...: context canceled"; it
// says it was interrupted.
func TestInterruptedLockWaitSaysInterrupted(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v"))
	unlock := h.lockVolume("v")
	defer unlock()
	ctx, cancel := endWhenWaitingForLock(h.ctx)
	defer cancel()
	if _, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil ||
		!strings.Contains(err.Error(), `interrupted while waiting for the lock on volume "v"`) {
		t.Fatalf("claim interrupted while waiting for the volume's lock: %v", err)
	}
}
