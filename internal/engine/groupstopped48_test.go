package engine

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestGroupRunOvertakenByAStopDoesNotReportTheClaimsItReleased: a `group stop` from another
// volctl while a `group run` of two allocs is at its second: the stop (which takes no group
// lock) records the group stopped and releases every claim of it, the first alloc's too, and
// the run's next claim is refused. The run said "1 of 2 allocs have their volumes", listing the
// first alloc's targets, of a group stopped and holding nothing. It now reads the allocs again,
// reports the group stopped and no alloc served, and its error says the stop released what it
// claimed.
func TestGroupRunOvertakenByAStopDoesNotReportTheClaimsItReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1, When: func(req proto.Message) bool {
		return strings.Contains(req.(*csipb.NodePublishVolumeRequest).GetTargetPath(), "db[1]")
	}})
	type result struct {
		info GroupInfo
		err  error
	}
	runDone, runErr := make(chan result, 1), make(chan error, 1)
	go func() {
		info, err := h.e.RunGroup(h.ctx, dbGroup(2))
		runDone <- result{info, err}
		runErr <- err
	}()
	h.waitInFlight(gate, runErr)

	stopCtx, waiting := whenWaitingForAnyLock(h.ctx)
	stopDone := make(chan error, 1)
	go func() { _, err := other.StopGroup(stopCtx, "db"); stopDone <- err }()
	waitFor(t, waiting, "the stop to wait for a lock the run holds")
	close(gate)

	r := <-runDone
	if err := <-stopDone; err != nil {
		t.Errorf("stop: %v", err)
	}
	if !errors.Is(r.err, ErrConflict) || !strings.Contains(r.err.Error(), `group "db" was stopped by another volctl`) {
		t.Errorf("run = %v; want a conflict saying the group was stopped meanwhile", r.err)
	}
	if r.info.State != string(store.GroupStopped) {
		t.Errorf("run reports the group %q; want it stopped", r.info.State)
	}
	for _, a := range r.info.Allocs {
		if a.Error == "" {
			t.Errorf("run reports alloc %s served, holding %d claim(s), of a group the stop released: %+v", a.Name, len(a.Claims), a)
		}
	}
	if live := h.groupLiveClaims("db"); len(live) != 0 {
		t.Errorf("group db is stopped and still holds %d claim(s): %+v", len(live), live)
	}
}
