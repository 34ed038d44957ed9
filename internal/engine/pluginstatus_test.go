package engine

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPluginStatusProbesPluginsAtOnce: PluginStatus probes every plugin concurrently, so that
// hung plugins cost one timeout, not one each. Two plugins here answer Probe only once the
// other's Probe has arrived: probed one after the other, the first would time out and show
// unhealthy.
func TestPluginStatusProbesPluginsAtOnce(t *testing.T) {
	t.Parallel()
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

// TestPluginStatusDoesNotWaitToRecord: with another process holding the state's write lock,
// PluginStatus answers at once with what the probe found, without recording it; once the lock
// is free the next PluginStatus records the reading and the health event.
func TestPluginStatusDoesNotWaitToRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	notReady := false
	h.mem.SetReady(&notReady)
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	h.mem.SetReady(nil)
	h.open(Config{}) // a new process: it fingerprints the plugin afresh

	release := h.holdWriteLock()

	ctx, cancel := context.WithTimeout(h.ctx, 8*time.Second) // far under the 30 s busy timeout
	defer cancel()
	infos, err := h.e.PluginStatus(ctx, "mem")
	if err != nil || len(infos) != 1 || !infos[0].Healthy || !infos[0].Ready || infos[0].Provider != "mem.csi.volctl.test" {
		t.Fatalf("PluginStatus with the write lock held elsewhere = %+v, %v; want the live reading, healthy and ready", infos, err)
	}
	stored, err := h.e.Plugins(ctx)
	if err != nil || stored[0].Ready {
		t.Fatalf("stored = %+v, %v; want the earlier reading (not ready) kept", stored, err)
	}
	// The dashboard's refresh is one read transaction: it does not wait either.
	if d, err := h.e.Dashboard(ctx, 200); err != nil || len(d.Plugins) != 1 {
		t.Fatalf("Dashboard with the write lock held elsewhere = %+v, %v", d, err)
	}
	release()

	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	stored, err = h.e.Plugins(h.ctx)
	if err != nil || !stored[0].Ready || stored[0].FingerprintedAt.IsZero() {
		t.Fatalf("stored after the lock was freed = %+v, %v; want the new reading", stored, err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{PluginID: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || !strings.Contains(evs[0].Message, "became healthy") {
		t.Errorf("newest plugin event = %+v, want the change to healthy", evs)
	}
}

// TestRegisteringAgainWhileProbedSharesTheConnection: the agent probes a plugin (PluginStatus)
// on one goroutine while a registration of the same plugin runs on another, as when its
// declaration changes under a running agent. The registration hands its new connection on to
// whoever connects next with the row it stored, without writing to the connection the probes
// read (under -race, writing its plugin row was a data race: CI saw it), and that connection is
// the one the next probe uses, not one dialled again.
func TestRegisteringAgainWhileProbedSharesTheConnection(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	stop := make(chan struct{})
	probed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				probed <- nil
				return
			default:
			}
			if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
				probed <- err
				return
			}
		}
	}()
	for range 30 {
		h.registerPlugin("mem", h.socket)
	}
	close(stop)
	if err := <-probed; err != nil {
		t.Fatal(err)
	}

	h.registerPlugin("mem", h.socket)
	h.e.mu.Lock()
	registered := h.e.conns["mem"]
	h.e.mu.Unlock()
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	h.e.mu.Lock()
	probedWith := h.e.conns["mem"]
	h.e.mu.Unlock()
	if registered == nil || probedWith != registered {
		t.Errorf("the probe after a registration connected anew (%p, registered with %p): the registration's connection was not handed on", probedWith, registered)
	}
}
