package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPluginStatusProbesPluginsAtOnce: PluginStatus probes every plugin concurrently, so that
// hung plugins cost one timeout, not one each. Two plugins here answer Probe only once the
// other's Probe has arrived: probed one after the other, the first would time out and show
// unhealthy.
func TestPluginStatusProbesPluginsAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	var (
		armed   atomic.Bool
		mu      sync.Mutex
		arrived int
		both    = make(chan struct{})
	)
	barrier := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if armed.Load() && info.FullMethod == "/csi.v1.Identity/Probe" {
			mu.Lock()
			if arrived++; arrived == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return handler(ctx, req)
	}
	for _, id := range []string{"a", "b"} {
		cfg := csitest.DefaultMemConfig()
		cfg.NodeID = "node-1"
		socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)), csitest.WithInterceptor(barrier))
		h.registerPlugin(id, socket)
	}
	armed.Store(true)
	infos, err := h.e.PluginStatus(h.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 3 {
		t.Fatalf("PluginStatus returned %d plugins, want 3", len(infos))
	}
	for _, p := range infos {
		if !p.Healthy {
			t.Errorf("plugin %q unhealthy (%s): the probes did not run at once", p.ID, p.LastError)
		}
	}
}
