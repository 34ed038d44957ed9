package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestSplitPluginServesTheWholeLifecycle: a driver run as two processes, a controller-only
// server and a node-only server with one driver name, registered half by half under one plugin
// ID as Nomad's controller and node plugin jobs are, creates, publishes, releases and deletes
// a volume: controller RPCs on the controller socket, node RPCs on the node socket.
func TestSplitPluginServesTheWholeLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	// One backend seen by both processes, as a cloud driver's controller and node see the
	// cloud; each server offers only its half's services.
	backend := csitest.NewMemPlugin(cfg)
	ctrlFaults, nodeFaults := csitest.NewFaults(), csitest.NewFaults()
	ctrlSock, _ := csitest.Serve(t, csitest.WithFaults(ctrlFaults), csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeSock, _ := csitest.Serve(t, csitest.WithFaults(nodeFaults), csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))

	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		t.Fatalf("register the controller half: %v", err)
	}
	info, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock})
	if err != nil {
		t.Fatalf("register the node half: %v", err)
	}
	if info.ControllerSocket != ctrlSock || info.NodeSocket != nodeSock || !info.Healthy || info.NodeID != "node-1" {
		t.Fatalf("the joined plugin = %+v", info)
	}

	sv := volume("v")
	sv.PluginID = "split"
	v := h.create(sv)
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
	if cl.State != "published" {
		t.Fatalf("claim = %+v", cl)
	}
	if got := backend.Targets(v.ExternalID); len(got) != 1 || got[0] != cl.TargetPath {
		t.Fatalf("targets = %v", got)
	}
	h.release("v", "web")
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete through the split plugin: %v", err)
	}
	if _, ok := backend.Volume(v.ExternalID); ok {
		t.Fatal("the volume's storage is still there after the delete")
	}

	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCControllerPublishVolume, csi.RPCControllerUnpublishVolume, csi.RPCDeleteVolume} {
		if ctrlFaults.Calls(rpc) != 1 || nodeFaults.Calls(rpc) != 0 {
			t.Errorf("%s: %d calls on the controller socket, %d on the node socket", rpc, ctrlFaults.Calls(rpc), nodeFaults.Calls(rpc))
		}
	}
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume} {
		if nodeFaults.Calls(rpc) != 1 || ctrlFaults.Calls(rpc) != 0 {
			t.Errorf("%s: %d calls on the node socket, %d on the controller socket", rpc, nodeFaults.Calls(rpc), ctrlFaults.Calls(rpc))
		}
	}

	// Registering a half again replaces that half only.
	nodeSock2, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	info, err = h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock2})
	if err != nil || info.ControllerSocket != ctrlSock || info.NodeSocket != nodeSock2 {
		t.Fatalf("re-registering the node half: %+v, %v", info, err)
	}

	// A half with an exec block cannot join: the agent starts one process per plugin.
	_, err = h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock,
		Exec: &spec.Exec{Command: "/bin/node-plugin"}})
	if err == nil || !strings.Contains(err.Error(), "cannot have an exec block") {
		t.Fatalf("joining a half with an exec block: %v", err)
	}
}

// TestNodeHalfAloneOfAControllerPlugin: only the node half of a driver that advertises
// CONTROLLER_SERVICE is registered (its controller job not yet, as happens with Nomad's two
// plugin jobs). Nothing can validate or attach its volumes, as Nomad's "no controllers available
// for plugin" says: registering a volume is refused rather than recorded unvalidated, creating
// one is refused naming the missing half (not sent to a plugin that cannot take it), and a
// claim is refused at admission, before any RPC and with no claim left, rather than staged on a
// volume that was never ControllerPublished.
func TestNodeHalfAloneOfAControllerPlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	nodeFaults := csitest.NewFaults()
	h.nodeHalfAlone(csitest.WithFaults(nodeFaults))
	sv := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "split", ExternalID: "ext-1",
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	_, err := h.e.RegisterVolume(h.ctx, sv)
	if err == nil || !strings.Contains(err.Error(), "controller") {
		t.Fatalf("register a volume with no controller to validate it = %v; want a refusal naming the missing controller", err)
	}

	// Creating one is refused naming the missing half, not answered "register an existing
	// volume instead", which is refused in its turn.
	cv := volume("c")
	cv.PluginID = "split"
	_, err = h.e.CreateVolume(h.ctx, cv)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "only its node half is registered") || strings.Contains(err.Error(), "register an existing volume") {
		t.Fatalf("create a volume with no controller half registered = %v; want ErrInvalid naming the missing controller half", err)
	}

	// Recorded anyway (by an older volctl, or before the controller half was deregistered).
	h.update(func(tx *store.Tx) error {
		v := store.VolumeFromSpec(sv)
		v.State = store.VolumeReady
		return tx.Volumes().Insert(&v)
	})
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "controller") {
		t.Fatalf("claim with no controller to attach the volume = %v; want ErrInvalid naming the missing controller", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims left behind: %+v", live)
	}
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		if n := nodeFaults.Calls(rpc); n != 0 {
			t.Errorf("%s sent %d time(s) for a volume never attached", rpc, n)
		}
	}
	// Nor is it snapshotted or deleted: each refusal names the missing half, not a capability
	// the driver has.
	if _, err := h.e.CreateSnapshot(h.ctx, "v", "", nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "only its node half is registered") {
		t.Errorf("snapshot with no controller half registered = %v; want ErrInvalid naming the missing controller half", err)
	}
	if err := h.e.DeleteVolume(h.ctx, "v"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "only its node half is registered") {
		t.Errorf("delete with no controller half registered = %v; want ErrInvalid naming the missing controller half", err)
	}
}

// TestNodeExpansionOwedWhileOnlyTheControllerHalfIsRegistered: a split plugin's controller half
// expands a volume and says node_expansion_required while its node half is not registered yet.
// The node expansion is owed, not dropped: once the node half joins, the claim that publishes
// the volume sends NodeExpandVolume, or the filesystem would stay the old size for good.
func TestNodeExpansionOwedWhileOnlyTheControllerHalfIsRegistered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	backend, nodeSock := h.controllerHalfWithVolume(cfg)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand through the controller half: %v", err)
	}
	if got := h.owed("v"); got != 4*mib {
		t.Fatalf("node expansion owed = %d, want %d (the controller said node_expansion_required)", got, 4*mib)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatal(err)
	}
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
	reqs := csitest.Requests[csi.NodeExpandVolumeRequest](backend)
	if len(reqs) != 1 || reqs[0].VolumePath != cl.TargetPath || reqs[0].CapacityMin != 4*mib {
		t.Fatalf("NodeExpandVolume at the publish: %+v, want one at %s", reqs, cl.TargetPath)
	}
	if got := h.owed("v"); got != 0 {
		t.Errorf("node expansion still owed after the publish: %d", got)
	}
}

// nodeHalfAlone registers plugin "split", a driver that advertises CONTROLLER_SERVICE, by its
// node half alone (node ID "node-1", holding volume "ext-1" of 1MiB), served with opts; it
// returns the driver.
func (h *harness) nodeHalfAlone(opts ...csitest.ServeOption) *csitest.MemPlugin {
	h.t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	backend := csitest.NewMemPlugin(cfg)
	backend.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 20})
	nodeSock, _ := csitest.Serve(h.t, append(opts, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))...)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		h.t.Fatalf("register the node half: %v", err)
	}
	return backend
}

// controllerHalfWithVolume serves a driver configured by cfg as two halves, the controller's
// socket (with ctrlOpts) and the node's, registers plugin "split" by its controller half alone,
// and creates volume "v" through it; it returns the driver and the node half's socket, not
// registered yet.
func (h *harness) controllerHalfWithVolume(cfg csitest.MemConfig, ctrlOpts ...csitest.ServeOption) (*csitest.MemPlugin, string) {
	h.t.Helper()
	backend := csitest.NewMemPlugin(cfg)
	ctrlSock, _ := csitest.Serve(h.t, append(ctrlOpts, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))...)
	nodeSock, _ := csitest.Serve(h.t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		h.t.Fatal(err)
	}
	sv := volume("v")
	sv.PluginID = "split"
	h.create(sv)
	return backend, nodeSock
}
