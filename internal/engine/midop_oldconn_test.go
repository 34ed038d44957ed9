package engine

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// serveInPlace serves srv at socket, replacing whatever file is there in one rename (as a
// plugin that binds a temporary name and renames it into place does), while the process that
// had the old file may still run: its connections live on.
func serveInPlace(t *testing.T, socket string, opts ...csitest.ServeOption) {
	t.Helper()
	tmp := socket + ".new"
	csitest.ServeAt(t, tmp, opts...)
	if err := os.Rename(tmp, socket); err != nil {
		t.Fatal(err)
	}
}

// Another driver takes the plugin's socket between a claim's NodeStageVolume and its
// NodePublishVolume, while the registered plugin still runs (an impostor that binds and renames
// its socket into place, or a second instance started before the first exits): volctl's client
// still holds a connection to the registered plugin. Before NodePublishVolume, the socket file
// is no longer the one the connection was fingerprinted through, and the plugin is asked who
// it is again (checkSockets): that question must reach whoever is on the socket's file now,
// not the registered plugin over the old connection. Before, the registered plugin answered
// it, the new listener was recorded as the socket's (checkServers), and once the registered
// plugin exited, gRPC's reconnect for NodePublishVolume itself reached the other driver, which
// was sent the volume's NodePublishVolume (its secrets with it) and the claim was recorded
// published.
func TestAnotherDriverOnTheSocketWhileTheOldConnectionLivesIsAskedNotTheOld(t *testing.T) {
	t.Parallel()
	p := newPluginPair()
	real, impostor, impFaults := p.real, p.impostor, p.impFaults

	var (
		mu      sync.Mutex
		armed   bool
		socket  string
		realSrv *grpc.Server
	)
	var swapped atomic.Bool // the impostor is on the socket; the registered plugin still runs
	var stopped sync.Once
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		mu.Lock()
		swap := armed && err == nil && info.FullMethod == "/csi.v1.Node/NodeStageVolume"
		armed = armed && !swap
		mu.Unlock()
		if swap {
			serveInPlace(t, socket, csitest.WithServer(impostor), csitest.WithFaults(impFaults))
			swapped.Store(true)
		}
		return resp, err
	}
	// Once the registered plugin has answered the question asked after the swap (its last
	// identity RPC), it exits, gracefully (GOAWAY: an RPC it did not take is sent again on a new
	// connection by gRPC itself): gRPC reconnects, to whatever is on the socket. Its listener's
	// close takes the name with it, and the impostor binds it again.
	observe := func(plugin, rpc, code string, d time.Duration) {
		if rpc != csi.RPCNodeGetInfo || !swapped.Load() {
			return
		}
		stopped.Do(func() {
			realSrv.GracefulStop()
			serveInPlace(t, socket, csitest.WithServer(impostor), csitest.WithFaults(impFaults))
		})
	}
	socket, _ = csitest.Serve(t, csitest.WithServer(real), csitest.WithInterceptor(hook),
		csitest.WithRegister(func(g *grpc.Server) { realSrv = g }))
	h, v := p.open(t, socket, Config{ObserveRPC: observe})

	mu.Lock()
	armed = true
	mu.Unlock()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	t.Logf("claim: %v", err)
	if !swapped.Load() {
		t.Fatal("the impostor never took the socket: the test did not swap where it meant to")
	}
	if _, ok := real.StagingPath(v.ExternalID); !ok {
		t.Fatal("the registered plugin has no staging of the volume: the test did not swap where it meant to")
	}
	for _, rpc := range []string{csi.RPCNodePublishVolume, csi.RPCNodeStageVolume, csi.RPCNodeUnstageVolume, csi.RPCNodeUnpublishVolume} {
		if n := impFaults.Calls(rpc); n != 0 {
			t.Errorf("the impostor (another driver) on the plugin's socket got %d %s", n, rpc)
		}
	}
	if err == nil {
		t.Error("the claim succeeded with another driver on the plugin's socket")
	}
	for _, c := range h.liveClaims("v") {
		if c.State == store.ClaimPublished {
			t.Errorf("claim recorded %s through another driver: %+v", c.State, c)
		}
	}
}
