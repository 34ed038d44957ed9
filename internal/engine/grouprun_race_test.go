package engine

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// Two `volctl group run`s of one group at once: the first has claimed db[0]'s data[0] and is
// claiming its shared when the second, from another process, finds data[0] held by the alloc
// (a claim it did not take, so not one it undoes) and joins the first's claim of shared. The
// plugin refuses shared, so the first releases what it took for the alloc, data[0], and the
// second failed with shared and reported db[0] still holding data[0], released under it. A
// run holds the group's lock while it records the group and runs its allocs: the second waits
// for the first to end, then runs on what it left, and what it reports held is held.
func TestTwoRunsOfOneGroupReportOnlyHeldClaims(t *testing.T) {
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	other := h.otherProcess()
	gate := make(chan struct{})
	// data[0]'s NodeStageVolume goes through; shared's waits at the gate, then is refused.
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Times: 1})
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Gate: gate, Code: codes.InvalidArgument, Times: 1})
	firstDone := make(chan error, 1)
	go func() { _, err := h.e.RunGroup(h.ctx, dbGroup(1)); firstDone <- err }()
	h.waitInFlight(gate, firstDone)

	type result struct {
		info GroupInfo
		err  error
	}
	secondDone := make(chan result, 1)
	go func() { info, err := other.RunGroup(h.ctx, dbGroup(1)); secondDone <- result{info, err} }()
	// The second run waits for a lock the first holds (shared's volume lock before; the
	// group's now).
	waitForGoroutineIn(t, "engine.(*locker).await", "engine.(*Engine).runGroup")
	close(gate)
	if err := <-firstDone; err == nil {
		t.Error("the first run, whose shared claim the plugin refused, succeeded")
	}
	second := <-secondDone
	live := h.groupLiveClaims("db")
	for _, a := range second.info.Allocs {
		for _, c := range a.Claims {
			if !slices.ContainsFunc(live, func(l2 store.Claim) bool { return l2.VolumeID == c.VolumeID && l2.Alloc == a.Name }) {
				t.Errorf("the second run reports alloc %s holding %s, which it does not hold (live claims: %+v)", a.Name, c.VolumeID, live)
			}
		}
	}
	if second.err != nil || len(second.info.Allocs) != 1 || len(second.info.Allocs[0].Claims) != 2 {
		t.Errorf("the second run = %+v, %v; want db[0] with its two claims, run once the first ended", second.info, second.err)
	}
}
