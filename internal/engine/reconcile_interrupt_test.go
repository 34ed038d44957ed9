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

// TestReconcileInterruptedSaysSoOnce: a reconcile interrupted (^C, an agent stopping) while it
// restores mounts. Before, each item it had not got to yet was reported as a problem of its
// own ("waiting for the lock on volume ...: context canceled", "state ...: context canceled",
// one per claim, stagings, orphans), as if each had failed. Found by interrupting volctl
// processes at random. Now the pass stops at the interruption and its error says once that it
// was interrupted and to run it again; what it did is kept, and the next pass finishes.
func TestReconcileInterruptedSaysSoOnce(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestPassDoesNotWaitForeverOnALockHeld: a volume command suspended (^Z) or hung while holding
// its volume's lock. Before, the agent's reconcile pass waited for that lock without end, so
// every other volume's restore after a reboot waited behind it, and no pass after it ran. With
// Config.PassLockWait (the agent's), the pass waits that long, reports the volume as left for
// the next pass, naming the lock, and restores the others; a pass once the lock is free
// restores it too. A command's own wait stays unbounded (it says it waits; ^C ends it).
func TestPassDoesNotWaitForeverOnALockHeld(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{PassLockWait: 200 * time.Millisecond})
	h.claimThenReboot("held", "a", spec.SingleNodeWriter)
	h.claimThenReboot("free", "b", spec.SingleNodeWriter)
	unlock := h.lockVolume("held")
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	rep, err := h.e.Reconcile(ctx)
	if ctx.Err() != nil {
		t.Fatalf("reconcile waited for the held lock until its context ended: %+v, %v", rep, err)
	}
	if err == nil || len(rep.Problems) == 0 {
		t.Fatalf("reconcile with volume held's lock held: %+v, %v; want it reported", rep, err)
	}
	for _, p := range rep.Problems { // its restore, and the look at its staging after
		if p.VolumeID != "held" || !strings.Contains(p.Message, `the lock on volume "held": another volctl has held it for more than 200ms`) {
			t.Fatalf("problem %+v; want only volume held's, naming its lock", p)
		}
	}
	restored := false
	for _, a := range rep.Actions {
		restored = restored || (a.Kind == "restored" && a.VolumeID == "free")
	}
	if !restored {
		t.Fatalf("the other volume was not restored: %+v", rep.Actions)
	}
	unlock()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the lock is free: %+v, %v", rep, err)
	}
}

// TestClaimGCDoesNotWaitForeverOnALockHeld: the same for the agent's claim GC (ReleasePast).
func TestClaimGCDoesNotWaitForeverOnALockHeld(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{PassLockWait: 200 * time.Millisecond})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
		t.Fatal("release with NodeUnpublishVolume unavailable succeeded")
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)
	unlock := h.lockVolume("v")
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	rep, err := h.e.ReleasePast(ctx)
	if ctx.Err() != nil {
		t.Fatalf("claim GC waited for the held lock until its context ended: %+v, %v", rep, err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, `the lock on volume "v": another volctl has held it for more than 200ms`) {
		t.Fatalf("claim GC with volume v's lock held: %+v, %v; want the claim reported", rep, err)
	}
	unlock()
	if rep, err := h.e.ReleasePast(h.ctx); err != nil || len(rep.Problems) != 0 || len(h.liveClaims("v")) != 0 {
		t.Fatalf("claim GC once the lock is free: %+v, %v; claims %+v", rep, err, h.liveClaims("v"))
	}
}

// TestReconcileDoesNotReportAClaimItsCommandFinished: a reconcile pass lists a claim on its way
// (its command in NodePublishVolume, holding the volume's lock), waits for the lock, and gets it
// once the command has published the claim. Before, the pass drove it again (a connection, a
// publish step that sent nothing) and reported "published claim ... (was node-staged)", work it
// did not do (seen in the agent's log while volctl commands were suspended and resumed). Now it
// reads the claim again under the lock, and a claim at rest is nothing to do or report.
func TestReconcileDoesNotReportAClaimItsCommandFinished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1})
	claimed := make(chan error, 1)
	go func() { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); claimed <- err }()
	h.waitInFlight(gate, claimed)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	type result struct {
		rep ReconcileReport
		err error
	}
	reconciled := make(chan result, 1)
	go func() { rep, err := h.e.Reconcile(ctx); reconciled <- result{rep, err} }()
	waitFor(t, waiting, "the pass to wait for the claim's lock")
	close(gate)
	if err := <-claimed; err != nil {
		t.Fatalf("claim: %v", err)
	}
	r := <-reconciled
	if r.err != nil || len(r.rep.Actions) != 0 {
		t.Fatalf("reconcile beside the claim's own command: %+v, %v; want nothing done or reported", r.rep, r.err)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 1 {
		t.Fatalf("NodePublishVolume sent %d times, want once (the claim's own)", n)
	}
}
