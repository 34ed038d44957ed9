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

// TestPluginReplacedMidOperation: another driver takes the plugin's socket in the middle of a
// release, between NodeUnpublishVolume and NodeUnstageVolume (the registered plugin killed, an
// impostor started in its place). The RPC cut off is retried, and gRPC reconnects to whatever
// now listens on the socket: without a check, the impostor's NOT_FOUND to NodeUnstageVolume
// and ControllerUnpublishVolume counts as done, and the claim is freed while the real driver
// still has the volume staged and attached. No volume RPC may go to the impostor; the release
// is left for reconcile, and the staging and attachment stay recorded.
func TestPluginReplacedMidOperation(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	real := csitest.NewMemPlugin(cfg)
	icfg := csitest.DefaultMemConfig()
	icfg.Name, icfg.NodeID = "impostor.csi.volctl.test", "node-1"
	impostor := csitest.NewMemPlugin(icfg)
	impFaults := csitest.NewFaults()

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
	dir := t.TempDir()
	socket, stopRea = csitest.Serve(t, csitest.WithServer(real), csitest.WithInterceptor(hook))
	h := &harness{t: t, ctx: context.Background(), mem: real, faults: csitest.NewFaults(), socket: socket, dir: dir,
		mounts: newFakeMounts(real)}
	h.open(Config{})
	h.registerPlugin("mem", socket)
	v := h.create(volume("v", capab(spec.SingleNodeWriter)))
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
