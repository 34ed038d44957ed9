package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// servedHalves holds one in-memory driver served as two halves (a controller socket and a node socket),
// registers plugin "split" half by half, and creates volume "v" through it. It returns the
// driver, the sockets, the node half's stop and the faults of each half.
type servedHalves struct {
	backend                *csitest.MemPlugin
	ctrlSock, nodeSock     string
	stopCtrl, stopNode     func()
	ctrlFaults, nodeFaults *csitest.Faults
}

func (h *harness) servedSplit() *servedHalves {
	h.t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	s := &servedHalves{backend: csitest.NewMemPlugin(cfg), ctrlFaults: csitest.NewFaults(), nodeFaults: csitest.NewFaults()}
	s.ctrlSock, s.stopCtrl = csitest.Serve(h.t, csitest.WithFaults(s.ctrlFaults), csitest.WithRegister(func(g *grpc.Server) {
		s.backend.RegisterServices(g, csitest.Identity, csitest.Controller)
	}))
	s.nodeSock, s.stopNode = csitest.Serve(h.t, csitest.WithFaults(s.nodeFaults), csitest.WithRegister(func(g *grpc.Server) {
		s.backend.RegisterServices(g, csitest.Identity, csitest.Node)
	}))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: s.ctrlSock}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: s.nodeSock}); err != nil {
		h.t.Fatal(err)
	}
	sv := volume("v")
	sv.PluginID = "split"
	h.create(sv)
	return s
}

// The node half's process replaced by another driver's before a claim begins (not
// mid-operation): the claim's fresh fingerprint finds the halves answering as two drivers.
// Mid-operation this is a conflict naming the node socket, the driver now on it and to start
// the registered driver there again, "as a monolith's" (TestSplitNodeHalfReplacedByAnotherDriverMidClaim);
// found at the connection, it said only that the halves answered as two drivers. Found by
// helper review68.
func TestSplitNodeHalfReplacedBeforeTheClaimIsAConflictWithAdvice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	s := h.servedSplit()
	other := csitest.NewMemPlugin(otherDriverConfig())
	s.stopNode()
	csitest.ServeAt(t, s.nodeSock, csitest.ReplacingSocket(), csitest.WithRegister(func(g *grpc.Server) {
		other.RegisterServices(g, csitest.Identity, csitest.Node)
	}))
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	t.Logf("claim: %v", err)
	if err == nil {
		t.Fatal("claim through a node half answered by another driver succeeded")
	}
	msg := err.Error()
	if !errors.Is(err, ErrConflict) || !strings.Contains(msg, s.nodeSock) || !strings.Contains(msg, `"other.csi.example"`) ||
		!strings.Contains(msg, `start "mem.csi.volctl.test" on that socket again`) {
		t.Errorf("claim's error = %v (conflict=%v)\nwant, as mid-operation and as for a monolith, a conflict naming node socket %s, the driver on it and to start the registered driver there again",
			err, errors.Is(err, ErrConflict), s.nodeSock)
	}
}

// A split plugin whose node half (the process that mounts on this host) is restarted as another
// version of the driver: "one that comes back as another version of its driver
// (GetPluginInfo's vendor_version ...), naming both" gets a plugin-capabilities event, the
// architecture says (TestPluginRestartedAsAnotherVersionIsAnEvent). Only the controller
// socket was asked its version (identity RPCs go there), so a node half upgraded or downgraded
// under the claims was recorded, probed and used in silence, as "1.0.0". Found by helper
// review68.
func TestSplitNodeHalfBackAsAnotherVersionIsAnEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	s := h.servedSplit()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	s.stopNode()
	nodeCfg := csitest.DefaultMemConfig()
	nodeCfg.NodeID, nodeCfg.Version = "node-1", "2.0.0"
	upgraded := csitest.NewMemPlugin(nodeCfg)
	csitest.ServeAt(t, s.nodeSock, csitest.ReplacingSocket(), csitest.WithRegister(func(g *grpc.Server) {
		upgraded.RegisterServices(g, csitest.Identity, csitest.Node)
	}))
	infos, err := h.e.PluginStatus(h.ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, ev := range evs {
		said = said || strings.Contains(ev.Message, `(node half: 2.0.0)"`)
	}
	if !said || infos[0].Version != "1.0.0 (node half: 2.0.0)" {
		t.Errorf("plugin-capabilities events after the node half came back as version 2.0.0: %+v; status says version %q\n"+
			"want an event naming the node half's new version, as for a monolith back as another version", evs, infos[0].Version)
	}
}
