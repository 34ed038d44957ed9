package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A group run that could not give alloc db[0] its volumes (the plugin failed its
// NodePublishVolume: rolled back) and was then interrupted (Ctrl-C) in alloc db[1] returned
// before recordRunErrors: the run's own record, made at its start with no run errors, stood.
// `group status` then showed db[0] holding nothing with no error at all (the row's "why" cell
// empty), where the docs promise "A run that could not give an alloc its volumes records the
// alloc's error with the group ... shows it on the alloc while it holds nothing". The run's
// own answer said why; status, read later, had lost it. Found by helper review63.
func TestInterruptedRunKeepsTheErrorOfAnAllocItFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	gate := make(chan struct{})
	// db[0]'s first NodePublishVolume (data[0]) fails for good; db[1]'s first is held.
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Code: codes.Internal, Times: 1})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1})
	r := h.runGroupInterruptedAt(dbGroup(2), gate, nil)
	close(gate)
	if r.err == nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("run = %v, want it interrupted", r.err)
	}
	if len(r.info.Allocs) == 0 || r.info.Allocs[0].Error == "" || len(r.info.Allocs[0].Claims) != 0 {
		t.Fatalf("the run's answer for db[0] = %+v, want it failed holding nothing", r.info.Allocs)
	}
	gs, err := h.e.Groups(h.ctx, "db")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) < 1 {
		t.Fatalf("group status = %+v %v", gs, err)
	}
	a := gs[0].Allocs[0]
	if len(a.Claims) != 0 {
		t.Fatalf("db[0] holds %+v after its claim was rolled back", a.Claims)
	}
	if !strings.Contains(a.Error, "Internal") {
		t.Errorf("group status shows db[0] holding nothing with error %q: the run that failed it (then interrupted) did not record why "+
			"(want the NodePublishVolume Internal failure the run itself reported: %q)", a.Error, r.info.Allocs[0].Error)
	}
}

// A `group run` that scales 3 down to 1, interrupted (Ctrl-C) in its first release, leaves
// db[1]'s shared and db[2]'s claims published and held. Its error listed each release it did
// not get to as "interrupted before the transaction began, nothing written: context canceled",
// and stopped there: unlike an interrupt before the scale-down (interruptedRun), nothing said
// the scale-down was cut short nor what finishes it (`volctl reconcile`, or the same `group
// run` again), though the doc promises an interrupted group run names what finishes it. Found
// by helper review63.
func TestInterruptedScaleDownSaysWhatFinishesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(3)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(3)); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { _, err := h.e.RunGroup(ctx, dbGroup(1)); done <- err }()
	h.waitInFlight(gate, done)
	cancel()
	err := <-done
	close(gate)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want it interrupted in its scale-down", err)
	}
	if n := len(h.liveClaims("data[2]")); n != 1 {
		t.Fatalf("data[2] has %d claims, want db[2]'s left by the interrupt", n)
	}
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "volctl reconcile") && !strings.Contains(last, "volctl group run") {
		t.Errorf("interrupted scale-down's error ends %q: nothing says the scale-down was cut short, nor that `volctl reconcile` "+
			"(or the run again) releases the claims it left (data[2] for db[2] still held); whole error:\n%v", last, err)
	}
}
