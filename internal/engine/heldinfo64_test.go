package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin replaced behind its held socket by another driver that answers Probe but not
// GetPluginInfo (an error, or a hang ending in the RPC's timeout): checkHealth asks the
// driver's name only to compare it, and on an error skipped the comparison, so the probe (the
// agent's every 30 s, plugin status, the dashboard) showed the plugin healthy while its driver
// was unknown, and its fingerprint was never marked stale: the next process's connection reused
// it without an RPC and sent volume RPCs to the other driver. Found by helper review64.
func TestProbeOfAHeldSocketWhoseDriverWillNotSayItsNameIsNotHealthy(t *testing.T) {
	t.Parallel()
	h, held, _ := heldHarness(t)
	h.create(volume("db"))

	cfg := csitest.DefaultMemConfig()
	cfg.Name, cfg.NodeID = "other.csi.example", "node-1"
	other := csitest.NewMemPlugin(cfg)
	faults := csitest.NewFaults()
	faults.FailAlways(csi.RPCGetPluginInfo, codes.Unavailable)
	socket, _ := csitest.Serve(t, csitest.WithServer(other), csitest.WithFaults(faults))
	held.Switch(socket)

	h.open(Config{})
	info, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(info) != 1 {
		t.Fatalf("status = %+v, want plugin mem's", info)
	}
	if got := info[0]; got.Health() == PluginHealthy {
		t.Errorf("status of the plugin now served by a driver that will not say its name: %s (last error %q); want it not healthy: its driver is not known to be %q",
			got.Health(), got.LastError, "mem's")
	}
	h.open(Config{})
	_, _ = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if got := volumeRPCs(other); len(got) != 0 {
		t.Errorf("volume RPCs sent to the other driver after the probe found it healthy: %v", got)
	}
}
