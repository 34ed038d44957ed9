package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestGuessLetGoIsNotSaidExpandedOnTheNode: a split plugin's controller half alone expands a
// volume; the answer is lost, and the one sent again says node_expansion_required false, so the
// node step is owed as a guess (NodeExpandGuessed). The node half then registers without
// EXPAND_VOLUME, and the user runs `volctl volume expand v --size 4MiB` (the size recorded): the
// engine lets the guess go (letGoOfGuess), sending nothing, and the command printed `Volume "v"
// expanded on the node to 4MiB`, an expansion that never happened. It says the volume is already
// that size, and the note says the guess was let go. Found by helper review71.
func TestGuessLetGoIsNotSaidExpandedOnTheNode(t *testing.T) {
	ctx := context.Background()
	e, backend := guessOwedThroughASplitPlugin(t)
	code, out, errOut := runOnOut(ctx, e, "volume", "expand", "v", "--size", "4MiB")
	t.Logf("expand again: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	sent := len(csitest.Requests[csi.NodeExpandVolumeRequest](backend))
	if sent == 0 && strings.Contains(out, "expanded on the node") {
		t.Errorf("no NodeExpandVolume was sent (the node half has no EXPAND_VOLUME: the guess was let go), and the expand printed:\n  %s", out)
	}
	if code != ExitOK || !strings.Contains(out, "is let go") || !strings.Contains(out, "no NodeExpandVolume was sent") {
		t.Errorf("expand again: exit %d, printed:\n  %s\nwant exit 0 and a note that the guess was let go, nothing sent", code, out)
	}
}

// guessOwedThroughASplitPlugin sets up what the guess tests start from: a split plugin "split"
// whose controller half alone expanded volume "v" to 4MiB, the answer lost and the one sent again
// saying node_expansion_required false, so the node step is owed as a guess; then its node half,
// without EXPAND_VOLUME, registered. It returns the engine and the plugins' backend.
func guessOwedThroughASplitPlugin(t *testing.T) (*engine.Engine, *csitest.MemPlugin) {
	t.Helper()
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Node.ExpandVolume = false
	cfg.Controller.ListVolumes = false // it cannot say the volume's size: the RPC is sent again
	backend := csitest.NewMemPlugin(cfg)
	faults := csitest.NewFaults()
	ctrlSock, _ := csitest.Serve(t, csitest.WithFaults(faults), csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "split", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: 1})
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Answer: func(m proto.Message) {
		m.(*csipb.ControllerExpandVolumeResponse).NodeExpansionRequired = false
	}})
	if code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "4MiB"); code != ExitOK {
		t.Fatalf("expand through the controller half: exit %d: %s", code, errOut)
	}
	if v, err := e.Volume(ctx, "v"); err != nil || v.NodeExpansionOwed != 4<<20 {
		t.Fatalf("after the lost answer: owed %d (%v); want the 4MiB owed as a guess", v.NodeExpansionOwed, err)
	}
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatal(err)
	}
	return e, backend
}
