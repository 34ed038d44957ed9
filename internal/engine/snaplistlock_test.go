package engine

import (
	"context"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// `snapshot list` of a plugin that pages slowly and without end (10,000 pages of 50 ms: 8
// minutes) holds the plugin's controller lock in turns (controllerTurns), so a snapshot create
// meanwhile, which takes that lock, goes through while the listing still runs, not after it.
func TestSlowSnapshotListingDoesNotHoldCreatesBack(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Delay: 50 * time.Millisecond, FirstPage: true,
		NextToken: func(start string) string { return start + "." }})
	lctx, stop := context.WithCancel(h.ctx)
	listed := make(chan error, 1)
	go func() {
		_, err := h.e.ListSnapshots(lctx, "mem", nil)
		listed <- err
	}()
	defer func() { stop(); <-listed }()
	for h.faults.Calls(csi.RPCListSnapshots) < 3 { // the listing holds the lock by now
		time.Sleep(10 * time.Millisecond)
	}
	created := make(chan error, 1)
	go func() {
		_, err := h.e.CreateSnapshot(h.ctx, "db", "meanwhile", nil)
		created <- err
	}()
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("create during the listing: %v", err)
		}
	case err := <-listed:
		t.Fatalf("the listing ended (%v) before the create went through, %d pages in", err, h.faults.Calls(csi.RPCListSnapshots))
	case <-time.After(60 * time.Second):
		t.Fatalf("create still waiting after 60 s, %d ListSnapshots pages in: the listing holds the plugin's controller lock throughout",
			h.faults.Calls(csi.RPCListSnapshots))
	}
	select {
	case err := <-listed:
		t.Fatalf("the listing ended (%v) while the plugin's pages never end", err)
	default:
	}
}
