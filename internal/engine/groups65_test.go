package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupRunDoesNotReleaseAPlainClaimMadeBesideIt (found by helper review65): a `group run` reads whether its alloc
// holds the volume (runAlloc's had) before its claim's admission; another volctl's `volume claim
// data[0] --alloc db[0]` admitted in between (here while the run's claim probes the plugin) makes
// the run's claim a conflict ("made outside group"), and the run's rollback then finds db[0]
// holding a claim it did not hold before and releases it as the run's own: the user's plain
// claim, which that command reported held and published, is unmounted from under it.
func TestGroupRunDoesNotReleaseAPlainClaimMadeBesideIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	other := h.otherProcess()
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCProbe, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	var info GroupInfo
	go func() {
		var err error
		info, err = h.e.RunGroup(h.ctx, dbGroup(1))
		done <- err
	}()
	h.waitInFlight(gate, done)
	// The run's claim of data[0] waits at its probe (holding the volume's lock); the other
	// volctl's plain claim of it for db[0] is admitted meanwhile, and waits for the lock.
	otherDone := make(chan error, 1)
	go func() {
		_, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "data[0]", Alloc: "db[0]",
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem})
		otherDone <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.liveClaims("data[0]")) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	err := <-done
	otherErr := <-otherDone
	t.Logf("run: %v", err)
	if otherErr != nil {
		t.Errorf("the other volctl's plain claim of data[0] for db[0]: %v; want it held (the group run's claim is the one refused)", otherErr)
	}
	live := h.liveClaims("data[0]")
	if len(live) != 1 || live[0].Group != "" {
		t.Errorf("data[0]'s claims after the run = %+v; want the plain claim of db[0] another volctl made, still held: "+
			"the run's claim was refused for it, and the run released it as its own (alloc answer: %+v)", live, info.Allocs)
	}
	if err != nil && strings.Contains(err.Error(), "the run released the claim again") {
		t.Errorf("the run says it released the claim again, of a claim another volctl made: %v", err)
	}
}
