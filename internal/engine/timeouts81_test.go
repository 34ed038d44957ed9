package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A split plugin (controller and node halves, two processes on two sockets) whose node half is
// restarted and then hangs GetPluginInfo: the fresh fingerprint asks the node socket which
// driver it serves (csi.Client.fingerprint's second pluginInfo), and runs into volctl's short
// timeout there. The claim's refusal and `plugin status` said only `fingerprint:
// GetPluginInfo: ... plugin "split" did not answer within ...; check its logs`: GetPluginInfo
// is the controller socket's RPC everywhere else (identity RPCs go to the controller), so the
// user is sent to the controller process, which answers fine, while the node half that hung is
// not named. Probe and DriverNames name the half and its socket for exactly this reason
// (TestSplitProbeFailureNamesTheHalfThatFailed); the fingerprint's node-half GetPluginInfo
// must too: its error should say "the node half, at socket NODE_SOCKET".
// Found by helper review81 (timeouts).
func TestSplitNodeHalfHungInGetPluginInfoIsNamedByTheFingerprint(t *testing.T) {
	h := newHarness(t, nil)
	s := h.servedSplit()
	cfg := hungConfig()
	cfg.Timeouts.Short = 300 * time.Millisecond
	h.open(cfg)
	// The node half restarted (a new socket file, so the next operation fingerprints it
	// afresh), and now hangs its GetPluginInfo; the controller half answers everything.
	s.stopNode()
	hung := csitest.NewFaults()
	hung.Hang(csi.RPCGetPluginInfo)
	csitest.ServeAt(t, s.nodeSock, csitest.ReplacingSocket(), csitest.WithFaults(hung), csitest.WithRegister(func(g *grpc.Server) {
		s.backend.RegisterServices(g, csitest.Identity, csitest.Node)
	}))

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		t.Fatal("claim through a split plugin whose node half hangs GetPluginInfo succeeded")
	}
	if !strings.Contains(err.Error(), "GetPluginInfo") || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Fatalf("claim's error = %v; want the fingerprint's GetPluginInfo timeout (precondition)", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "the node half, at socket "+s.nodeSock) {
		t.Errorf("claim's error = %v\nwant it to name the node half and its socket %s (the half that hung), as a Probe's does", err, s.nodeSock)
	}

	infos, err := h.e.PluginStatus(h.ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Healthy {
		t.Fatalf("plugin status = %+v; want split unhealthy (precondition)", infos)
	}
	if last := infos[0].LastError; !strings.Contains(last, "the node half, at socket "+s.nodeSock) {
		t.Errorf("plugin status says %q\nwant it to name the node half and its socket %s (the half that hung), as a Probe's does", last, s.nodeSock)
	}
}
