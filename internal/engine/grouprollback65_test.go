package engine

import (
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestGroupRunRollsBackAClaimItMadeAfterAnotherReleaseOfTheAllocs (found by helper review65): runAlloc's
// had is read before the claim, and a claim being released counts as held. Another volctl's
// `volume release data[0] --alloc db[0]` in flight when a `group run` of db reaches data[0]
// makes had true; the run's claim waits for that release, then makes a new claim of its own
// (the old one is gone). taken does not list it (had), and when the alloc's next volume
// fails, the rollback releases only what taken lists: db[0] is left holding data[0] and not
// shared, against RunGroup's promise that each alloc gets all its volumes or none ("the
// claims this run already got for that alloc are released again").
func TestGroupRunRollsBackAClaimItMadeAfterAnotherReleaseOfTheAllocs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
		t.Fatal(err)
	}
	// db[0]'s second volume, shared, is gone before the next run: its claim there fails.
	if _, err := h.e.Release(h.ctx, "shared", "db[0]"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteVolume(h.ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	before := h.liveClaims("data[0]")
	if len(before) != 1 {
		t.Fatalf("data[0] claims after the first run: %+v", before)
	}

	// Another volctl releases db[0]'s claim of data[0]; held at its NodeUnpublishVolume.
	other := h.otherProcess()
	relGate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: relGate, Times: 1})
	relDone := make(chan error, 1)
	go func() { _, err := other.Release(h.ctx, "data[0]", "db[0]"); relDone <- err }()
	h.waitInFlight(relGate, relDone)

	// The run reads had (data[0]'s claim, being released) just after it records the group,
	// and its claim then waits for data[0]'s lock, which the release holds. (Were had read
	// after the release, the run would roll its claim back: a slow machine makes this test
	// pass, never fail.)
	recorded := make(chan struct{})
	h.e.failpointHook = func(name string) {
		if name == "group:recorded" {
			close(recorded)
		}
	}
	runDone := make(chan error, 1)
	var info GroupInfo
	go func() {
		var err error
		info, err = h.e.RunGroup(h.ctx, dbGroup(1))
		runDone <- err
	}()
	select {
	case <-recorded:
	case err := <-runDone:
		close(relGate)
		t.Fatalf("the run ended before it recorded the group: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	close(relGate)
	if err := <-relDone; err != nil {
		t.Fatalf("the other volctl's release: %v", err)
	}
	err := <-runDone
	t.Logf("run: %v", err)
	if err == nil {
		t.Fatal("the run succeeded: shared is deleted")
	}
	live := h.liveClaims("data[0]")
	for _, c := range live {
		if c.ID == before[0].ID {
			t.Fatalf("data[0]'s claim is the one held before the run (%d): the release did not finish first", c.ID)
		}
	}
	if len(live) != 0 {
		t.Errorf("after a run whose db[0] failed (shared is gone), data[0] holds %+v: a claim this run made (the one before it was released by another volctl), "+
			"left held beside a failed alloc; want it released again, all or none (alloc answer: %+v)", live, info.Allocs)
	}
}
