package engine

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// chaos34: failpoints inside the register, deregister and handover commands themselves (not
// the tests' callbacks), each paused at while another process's command runs.

// splitHalves serves one backend's controller and node halves on two sockets, as a driver run
// as Nomad's controller and node plugin jobs is.
func splitHalves(t *testing.T) (ctrlSock, nodeSock string) {
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	backend := csitest.NewMemPlugin(cfg)
	ctrlSock, _ = csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeSock, _ = csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	return ctrlSock, nodeSock
}

// The controller half of a split plugin registered, paused once fingerprinted (failpoint
// plugin:fingerprinted, nothing recorded yet), while another process registers the node half:
// after both, the plugin has both halves, or the one that could not join says so. Before, each
// joined with the row as it read it before its fingerprint (none), and the later commit
// replaced the other's half: both said "registered", and the plugin was left with one half
// (claims refused for want of a node or a controller).
func TestPausedPairPluginRegisterHalves(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctrlSock, nodeSock := splitHalves(t)
	out := h.pausedPair("plugin:fingerprinted",
		func(ctx context.Context) error {
			_, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock})
			return err
		},
		func(ctx context.Context, other *Engine) error {
			_, err := other.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock})
			return err
		})
	t.Logf("controller half: %v; node half (waited %v): %v", out.aErr, out.bWaited, out.bErr)
	infos, err := h.e.PluginStatus(h.ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	got := infos[0]
	if out.aErr == nil && got.ControllerSocket != ctrlSock {
		t.Errorf("the controller half's register said it registered, and plugin split's controller socket is %q, want %q", got.ControllerSocket, ctrlSock)
	}
	if out.bErr == nil && got.NodeSocket != nodeSock {
		t.Errorf("the node half's register said it registered, and plugin split's node socket is %q, want %q", got.NodeSocket, nodeSock)
	}
	saysWhatItWaitedFor(t, "the controller half", out.aErr, "split")
}
