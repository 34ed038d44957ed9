package csi_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// observed is one call of Config.Observe.
type observed struct {
	rpc, code string
	d         time.Duration
}

// TestObserveSeesEveryRPCWithItsCode: Config.Observe is called once per RPC sent, with the RPC's
// name and its gRPC code, for a success, a plugin's failure and volctl's own timeout alike.
func TestObserveSeesEveryRPCWithItsCode(t *testing.T) {
	var mu sync.Mutex
	var got []observed
	cfg := csi.Config{
		Timeouts: csi.Timeouts{Short: 300 * time.Millisecond},
		Observe: func(rpc, code string, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, observed{rpc, code, d})
		},
	}
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(cfg))
	ctx := context.Background()
	if _, err := h.client.NodeGetInfo(ctx); err != nil {
		t.Fatal(err)
	}
	h.faults.FailOnce("NodeStageVolume", codes.Unavailable)
	if err := h.client.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: "v", StagingPath: "/s", Capability: fsWriter}); err == nil {
		t.Fatal("NodeStageVolume: want the injected failure")
	}
	h.faults.Hang("NodeGetCapabilities")
	if _, err := h.client.NodeGetCapabilities(ctx); err == nil {
		t.Fatal("NodeGetCapabilities: want volctl's timeout")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []observed{{"NodeGetInfo", "OK", 0}, {"NodeStageVolume", "Unavailable", 0}, {"NodeGetCapabilities", "DeadlineExceeded", 0}}
	if len(got) != len(want) {
		t.Fatalf("observed %d RPCs %v, want %d %v", len(got), got, len(want), want)
	}
	for i, w := range want {
		if got[i].rpc != w.rpc || got[i].code != w.code {
			t.Errorf("RPC %d observed as %s %s, want %s %s", i, got[i].rpc, got[i].code, w.rpc, w.code)
		}
		if got[i].d <= 0 {
			t.Errorf("RPC %d (%s): duration %s, want > 0", i, got[i].rpc, got[i].d)
		}
	}
	if got[2].d < 300*time.Millisecond {
		t.Errorf("the timed-out RPC took %s, want at least its 300ms timeout", got[2].d)
	}
}
