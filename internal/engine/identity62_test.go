package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A claim that waited for the controller lock while its plugin restarted with a lower
// max_volumes_per_node that still leaves room for it (4 → 3, the claim the only volume on the
// node) is refused mid-operation and rolled back, "claim the volume again to have it admitted
// against the ones now": admission against the ones now admits it. The architecture says such a
// claim "is refused as admission would refuse it"; a limit lowered yet not reached is no
// refusal of admission's (admitsAll). Before, refused. Found by helper review62.
func TestClaimIsNotRefusedForALimitLoweredButNotReached(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MaxVolumes = 4 })
	h.create(volume("v"))
	done, unlock := claimWaitingForTheControllerLock(t, h)
	h.restartWith(func(c *csitest.MemConfig) { c.MaxVolumes = 3 }) // lower, but 3 > 0 volumes on the node
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("the claim, the only volume on a node whose plugin restarted allowing 3 volumes (was 4) = %v; want it published, as admission now admits it", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Errorf("v's claims = %+v, want the claim", live)
	}
}

// A split plugin (controller and node halves on two sockets) whose node half is restarted as
// another driver while a claim's ControllerPublishVolume is in flight: the claim sends the
// other driver nothing, and its error says what changed as the monolith's does ("socket S now
// served by X, registered as Y", a conflict naming the plugin: csi.HalvesDiffer). Before, a
// plain failure, Unknown, "checking it again failed", naming neither which driver is the
// registered one nor what to do. Found by helper review62.
func TestSplitNodeHalfReplacedByAnotherDriverMidClaim(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	backend := csitest.NewMemPlugin(cfg)
	other := csitest.NewMemPlugin(otherDriverConfig())
	otherFaults := csitest.NewFaults()

	var (
		mu       sync.Mutex
		armed    bool
		nodeSock string
		stopNode func()
	)
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		mu.Lock()
		fire := armed && info.FullMethod == "/csi.v1.Controller/ControllerPublishVolume"
		armed = armed && !fire
		mu.Unlock()
		if fire {
			// The node half's process replaced by another driver's, on its path.
			csitest.ServeAt(t, nodeSock, csitest.WithFaults(otherFaults), csitest.ReplacingSocket(), csitest.WithRegister(func(s *grpc.Server) {
				other.RegisterServices(s, csitest.Identity, csitest.Node)
			}))
			stopNode()
		}
		return resp, err
	}
	ctrlSock, _ := csitest.Serve(t, csitest.WithInterceptor(hook), csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeSock, stopNode = csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatal(err)
	}
	sv := volume("v")
	sv.PluginID = "split"
	h.create(sv)
	mu.Lock()
	armed = true
	mu.Unlock()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	t.Logf("claim: %v", err)
	if err == nil {
		t.Fatal("the claim went on through another driver on the node socket")
	}
	for rpc, n := range otherFaults.Counts() {
		if rpc != csi.RPCGetPluginInfo && rpc != csi.RPCGetPluginCapabilities && rpc != csi.RPCNodeGetCapabilities && rpc != csi.RPCNodeGetInfo && rpc != csi.RPCProbe && n.Calls > 0 {
			t.Errorf("%s sent %d times to the other driver on the node socket", rpc, n.Calls)
		}
	}
	msg := err.Error()
	if !errors.Is(err, ErrConflict) || !strings.Contains(msg, `"other.csi.example"`) || !strings.Contains(msg, nodeSock) ||
		!strings.Contains(msg, `start "mem.csi.volctl.test" on that socket again`) {
		t.Errorf("the claim's error = %v\nwant a conflict, as for a monolith replaced by another driver, naming the node socket %s, the driver now on it (%q) and to start the registered one again",
			err, nodeSock, "other.csi.example")
	}
}

// A probe (`plugin status`, the agent's every 30 s, the dashboard) that fingerprinted a plugin
// restarted since its record, while another volctl registers the ID again for another driver on
// another socket (no volume uses it, so the registration is not refused): the probe's write of
// what it found goes over the new row, as the connection's write does not
// (pluginStillRegistered). The new registration's driver is then pinned to the old one's, and
// every connection to the plugin as registered is refused, "now served by" the very driver
// it was registered for. Now the probe records nothing over a row registered on other sockets
// (errRegisteredAnew). Found by helper review62.
func TestProbeDoesNotWriteItsFingerprintOverARegistrationAnew(t *testing.T) {
	t.Parallel()
	h, gate, done := probeHeldAtItsProbe(t)
	ocfg := otherDriverConfig()
	otherSock, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(ocfg)))
	other := h.otherProcess()
	if _, err := other.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: otherSock}); err != nil {
		close(gate)
		t.Fatalf("registering mem again for another driver: %v", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Logf("the probe: %v", err)
	}

	pinnedToTheOtherDriver(t, h, otherSock)
}

// A probe (`plugin status`, the agent's every 30 s) that fingerprinted the plugin while
// another volctl registers the ID again for another driver on the SAME socket path (the plugin
// binary swapped for another driver's, listening where the old one did, then `plugin register`
// run again): the probe's write of what it found goes over the new row, as with a registration
// on other sockets, which errRegisteredAnew now refuses. checkHealth compares the sockets only,
// not the driver (pluginStillRegistered, which its comment says it mirrors, compares both). The
// new registration's driver is then pinned to the old one's, and the plugin shows unhealthy,
// "now served by" the very driver it was registered for. Now the reading is of the
// registration it read only for its sockets and its driver (reading.of). Found by helper
// review62, reviewing this round's fix.
func TestProbeDoesNotWriteItsFingerprintOverARegistrationAnewOnTheSameSocket(t *testing.T) {
	t.Parallel()
	h, gate, done := probeHeldAtItsProbe(t)
	// Another driver now listens on the plugin's socket path (the old process still answers
	// the probe's connection), and another volctl registers mem there again for it.
	ocfg := otherDriverConfig()
	csitest.ServeAt(t, h.socket, csitest.WithServer(csitest.NewMemPlugin(ocfg)), csitest.ReplacingSocket())
	other := h.otherProcess()
	if _, err := other.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		close(gate)
		t.Fatalf("registering mem again on its socket for another driver: %v", err)
	}
	if infos, err := other.PluginStatus(h.ctx, "mem"); err != nil || infos[0].Provider != "other.csi.example" || !infos[0].Healthy {
		close(gate)
		t.Fatalf("right after the registration anew: %+v, %v", infos, err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Logf("the probe: %v", err)
	}
	h.stopServe() // the old driver's process is gone

	pinnedToTheOtherDriver(t, h, h.socket)
}

// probeHeldAtItsProbe starts `plugin status mem` in h's process, the plugin restarted since
// its record (a new socket file: the probe's connection fingerprints it), and returns once its
// Probe is held at the plugin: the gate that lets it go, and where its error comes.
func probeHeldAtItsProbe(t *testing.T) (h *harness, gate chan struct{}, done chan error) {
	t.Helper()
	h = newHarness(t, nil)
	h.restartWith(func(*csitest.MemConfig) {})
	gate = make(chan struct{})
	h.faults.Inject(csi.RPCProbe, csitest.Fault{Gate: gate, Times: 1})
	done = make(chan error, 1)
	go func() { _, err := h.e.PluginStatus(h.ctx, "mem"); done <- err }()
	for h.faults.Held() == 0 {
		select {
		case err := <-done:
			close(gate)
			t.Fatalf("the probe ended before its Probe: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	return h, gate, done
}

// otherDriverConfig is an in-memory plugin on node-1 answering as another driver.
func otherDriverConfig() csitest.MemConfig {
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	cfg.Name = "other.csi.example"
	return cfg
}

// pinnedToTheOtherDriver fails the test unless plugin mem, registered again on socket for
// otherDriverConfig's driver, reads so to a third process's probe: that driver, healthy.
func pinnedToTheOtherDriver(t *testing.T, h *harness, socket string) {
	t.Helper()
	infos, err := h.otherProcess().PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	got := infos[0]
	if got.Provider != "other.csi.example" || !got.Healthy {
		t.Errorf("plugin mem, registered again on %s for other.csi.example = provider %q, healthy %v, last error %q; want it pinned to the driver it was registered for",
			socket, got.Provider, got.Healthy, got.LastError)
	}
}
