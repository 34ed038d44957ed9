package engine

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// pluginPair is a plugin's two drivers for a test of another driver taking its socket in
// the middle of an operation: real, the mem plugin registered on node-1, and impostor, another
// driver (impostor.csi.volctl.test) on the same node, whose faults count the RPCs it got.
type pluginPair struct {
	real, impostor *csitest.MemPlugin
	impFaults      *csitest.Faults
}

func newPluginPair() pluginPair {
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	icfg := csitest.DefaultMemConfig()
	icfg.Name, icfg.NodeID = "impostor.csi.volctl.test", "node-1"
	return pluginPair{real: csitest.NewMemPlugin(cfg), impostor: csitest.NewMemPlugin(icfg), impFaults: csitest.NewFaults()}
}

// open is an engine (cfg) with p.real registered as plugin mem at socket, where the test
// serves it, and its volume v (single-node-writer) created.
func (p pluginPair) open(t *testing.T, socket string, cfg Config) (*harness, VolumeInfo) {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), mem: p.real, faults: csitest.NewFaults(), socket: socket, dir: t.TempDir(),
		mounts: newFakeMounts(p.real)}
	h.open(cfg)
	h.registerPlugin("mem", socket)
	return h, h.create(volume("v", capab(spec.SingleNodeWriter)))
}

// TestPluginReplacedMidOperation: another driver takes the plugin's socket in the middle of a
// release, between NodeUnpublishVolume and NodeUnstageVolume (the registered plugin killed, an
// impostor started in its place). The RPC cut off is retried, and gRPC reconnects to whatever
// now listens on the socket: without a check, the impostor's NOT_FOUND to NodeUnstageVolume
// and ControllerUnpublishVolume counts as done, and the claim is freed while the real driver
// still has the volume staged and attached. No volume RPC may go to the impostor; the release
// is left for reconcile, and the staging and attachment stay recorded.
func TestPluginReplacedMidOperation(t *testing.T) {
	t.Parallel()
	p := newPluginPair()
	real, impostor, impFaults := p.real, p.impostor, p.impFaults

	var (
		mu      sync.Mutex
		swap    bool
		stopRea func()
		socket  string
	)
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		armed := swap && info.FullMethod == "/csi.v1.Node/NodeUnstageVolume"
		swap = swap && !armed
		mu.Unlock()
		if armed {
			stopRea()
			csitest.ServeAt(t, socket, csitest.WithServer(impostor), csitest.WithFaults(impFaults))
			return nil, status.Error(codes.Unavailable, "killed")
		}
		return handler(ctx, req)
	}
	socket, stopRea = csitest.Serve(t, csitest.WithServer(real), csitest.WithInterceptor(hook))
	h, v := p.open(t, socket, Config{})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	mu.Lock()
	swap = true
	mu.Unlock()
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil {
		t.Error("the release succeeded through another driver")
	}
	for _, rpc := range []string{csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume, csi.RPCNodeUnpublishVolume} {
		if n := impFaults.Calls(rpc); n != 0 {
			t.Errorf("the impostor got %d %s", n, rpc)
		}
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Errorf("claims = %+v; want the release left for reconcile", live)
	}
	if st, ok := h.staging("v"); !ok || !st.Staged || !st.ControllerPublished {
		t.Errorf("staging = %+v, %v; want it still recorded as staged and attached", st, ok)
	}
	if _, ok := real.StagingPath(v.ExternalID); !ok {
		t.Fatal("the real driver lost the staging: the test did not swap where it meant to")
	}
}
