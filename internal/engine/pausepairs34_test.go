package engine

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
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

// registerOf is a `volume register` of volume id, external ID ext, from engine e.
func registerOf(e *Engine, id, ext string) func(ctx context.Context) error {
	return func(ctx context.Context) error { _, err := e.RegisterVolume(ctx, registered(id, ext)); return err }
}

// A volume's register paused once its plugin validated it (failpoint register:validated,
// nothing recorded yet), while another process registers the same storage under another ID
// (another volume's lock, not this one's): one ID holds it, the other is refused naming the
// volume that does; never two IDs on one storage, whose claims would ignore each other's
// access mode.
func TestPausedPairVolumeRegisterSameStorageTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 20})
	out := h.pausedPair("register:validated", registerOf(h.e, "v1", "ext-1"),
		func(ctx context.Context, other *Engine) error { return registerOf(other, "v2", "ext-1")(ctx) })
	t.Logf("v1: %v; v2 (waited %v): %v", out.aErr, out.bWaited, out.bErr)
	if (out.aErr == nil) == (out.bErr == nil) {
		t.Errorf("register v1: %v; register v2: %v (want exactly one to hold ext-1)", out.aErr, out.bErr)
	}
	if out.aErr != nil && !strings.Contains(out.aErr.Error(), `"v2"`) {
		t.Errorf("the refused register of v1 does not name v2, which holds ext-1: %v", out.aErr)
	}
	if gone1, gone2 := h.volumeGone("v1"), h.volumeGone("v2"); gone1 == gone2 {
		t.Errorf("v1 recorded %v, v2 recorded %v: want exactly one", !gone1, !gone2)
	}
}

// A volume's register paused once validated, while another process deregisters its plugin
// with --force (no volume uses it yet): the register is refused naming the plugin, and records
// nothing, not a volume on a plugin that is gone.
func TestPausedPairVolumeRegisterPluginDeregisterForced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 20})
	out := h.pausedPair("register:validated", registerOf(h.e, "v", "ext-1"),
		func(ctx context.Context, other *Engine) error { return other.DeregisterPlugin(ctx, "mem", true) })
	t.Logf("register: %v; plugin deregister (waited %v): %v", out.aErr, out.bWaited, out.bErr)
	if out.bErr != nil {
		t.Fatalf("the forced plugin deregister: %v", out.bErr)
	}
	if out.aErr == nil || !strings.Contains(out.aErr.Error(), `plugin "mem"`) {
		t.Errorf("the register, its plugin deregistered meanwhile: %v; want refused naming plugin mem", out.aErr)
	}
	if !h.volumeGone("v") {
		t.Errorf("volume v recorded on plugin mem, deregistered")
	}
}
