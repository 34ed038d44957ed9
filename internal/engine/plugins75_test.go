package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// splitHeldNodeHarness is a harness whose plugin "split" is registered in two halves, as Nomad
// runs a plugin: its controller half on a socket of its own, its node half on a socket
// something else holds (csitest.HoldSocket: a socket-activation unit, a proxy), forwarding to
// the node process; both halves are driver mem.csi.volctl.test. It returns the held socket,
// whose backend can be switched to another process without the socket file changing.
func splitHeldNodeHarness(t *testing.T, other *csitest.MemPlugin) (*harness, *csitest.HeldSocket) {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	h := &harness{t: t, ctx: t.Context(), mem: csitest.NewMemPlugin(cfg), faults: csitest.NewFaults(), dir: t.TempDir()}
	ctrlSock, stop := csitest.Serve(t, csitest.WithFaults(h.faults), csitest.WithRegister(func(s *grpc.Server) {
		h.mem.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeBackend, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		h.mem.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	held := csitest.HoldSocket(t, nodeBackend)
	h.socket, h.stopServe = ctrlSock, stop
	h.mounts = newFakeMounts(h.mem, other)
	h.open(Config{})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		t.Fatalf("register the controller half: %v", err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: held.Path()}); err != nil {
		t.Fatalf("register the node half: %v", err)
	}
	infos, err := h.e.PluginStatus(h.ctx, "split")
	if err != nil || len(infos) != 1 || infos[0].Health() != PluginHealthy || infos[0].NodeSocket != held.Path() {
		t.Fatalf("split plugin before the swap: %+v, %v; want it healthy, its node half on %s", infos, err, held.Path())
	}
	return h, held
}

// otherNodeBehind serves other's identity and node services (another driver's node plugin) and
// puts it behind held, as a node plugin replaced behind a socket something else holds.
func otherNodeBehind(t *testing.T, held *csitest.HeldSocket, other *csitest.MemPlugin) {
	t.Helper()
	sock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		other.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	held.Switch(sock)
}

// TestSplitPluginStatusSeesAnotherDriverBehindItsHeldNodeSocket: a split plugin whose node half
// is replaced, behind a node socket something else holds, by another driver's node plugin.
// `plugin status` (checkHealth) asks the driver's name on every probe precisely because a held
// socket keeps its file (TestProbeOfAHeldSocketServedByAnotherDriverShowsItUnhealthy), but it
// asks through csi.Client.GetPluginInfo, which goes to the controller socket only
// (endpointFor: identity RPCs to the controller when there is one). The node half is never
// asked: the plugin is shown healthy, its fingerprint reused as it was, and the next claim's
// NodeStageVolume and NodePublishVolume go to the other driver. Correct: the probe asks each
// configured socket for its driver, as Probe itself asks each, and shows the plugin unhealthy
// ("socket S now served by X, registered as Y"), its fingerprint marked stale. Found by helper
// review75.
func TestSplitPluginStatusSeesAnotherDriverBehindItsHeldNodeSocket(t *testing.T) {
	t.Parallel()
	other := csitest.NewMemPlugin(otherDriverConfig())
	h, held := splitHeldNodeHarness(t, other)
	otherNodeBehind(t, held, other)
	h.open(Config{}) // another volctl process: the stored fingerprint, taken through these socket files
	infos, err := h.e.PluginStatus(h.ctx, "split")
	if err != nil || len(infos) != 1 {
		t.Fatalf("plugin status split: %+v, %v", infos, err)
	}
	if got := infos[0]; got.Health() == PluginHealthy || !strings.Contains(got.LastError, `now served by "other.csi.example"`) {
		t.Errorf("plugin status of split, whose node socket another driver (other.csi.example) now answers on: %s, provider %q, last error %q; "+
			"want it unhealthy, naming the driver on the node socket", got.Health(), got.Provider, got.LastError)
	}
}

// TestSplitPluginsHeldNodeSocketServedByAnotherDriverGetsNoClaim: the claim that follows such a
// probe. The other driver holds a volume of the same external ID (the sequential IDs many
// drivers give) and stages without an attachment of its own, so nothing it answers fails and
// no fingerprint is taken again (checkAnswerer asks only on an error): the claim is
// published, the alloc given the other driver's storage (NodeStageVolume and
// NodePublishVolume of "vol-1" sent to other.csi.example), and volctl records it as volume v's.
// Correct: no volume RPC goes to a driver that is not the registered one; the claim is refused
// naming the socket and the driver now on it, as it is for a monolith or for a node half whose
// socket file was replaced. Found by helper review75.
func TestSplitPluginsHeldNodeSocketServedByAnotherDriverGetsNoClaim(t *testing.T) {
	t.Parallel()
	cfg := otherDriverConfig()
	cfg.Controller.PublishUnpublishVolume = false // its node plugin stages what it holds, no attachment asked
	other := csitest.NewMemPlugin(cfg)
	h, held := splitHeldNodeHarness(t, other)
	sv := volume("v")
	sv.PluginID = "split"
	ext := h.create(sv).ExternalID
	other.AddVolume(csi.Volume{ID: ext, CapacityBytes: 1 << 20})
	otherNodeBehind(t, held, other)
	h.open(Config{})
	if _, err := h.e.PluginStatus(h.ctx, "split"); err != nil {
		t.Fatalf("plugin status split: %v", err)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if got := volumeRPCs(other); len(got) != 0 {
		t.Errorf("claim of v (external ID %q) through split, whose node socket another driver now answers on: %v; volume RPCs sent to that driver: %v; want none, the claim refused",
			ext, err, got)
	}
	if err == nil {
		t.Errorf("claim of v through the other driver's node plugin succeeded: its alloc holds other.csi.example's storage as v's")
	}
}
