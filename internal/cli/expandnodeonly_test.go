package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// `volume expand` of a volume whose controller expansion is pending, through a plugin back from
// a restart with node EXPAND_VOLUME alone, finishes it node-only and says so in its output,
// naming the plugin and the sizes (fix32b; the engine's rule:
// TestPendingExpansionThroughAPluginThatLostControllerExpand).
func TestExpandSaysAPendingExpansionWasFinishedNodeOnly(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	faults := csitest.NewFaults()
	socket, stop := csitest.Serve(t, csitest.WithServer(mem), csitest.WithFaults(faults))
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	createSingleWriter(t, e, "v")
	faults.FailAlways(csi.RPCControllerExpandVolume, codes.Unavailable)
	if code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "2GiB"); code == ExitOK {
		t.Fatalf("expand with the plugin unavailable succeeded: %s", errOut)
	}
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	csitest.ServeAt(t, socket, csitest.WithServer(mem))

	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	f.engine = e
	root := NewRootCmd(f)
	root.SetArgs([]string{"volume", "expand", "v", "--size", "2GiB"})
	code := f.Report(root.ExecuteContext(ctx))
	if code != ExitOK {
		t.Fatalf("expand through a plugin now declaring node-only expansion: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Note: the pending controller expansion to 2GiB", "finished node-only, to 2GiB",
		`plugin "mem" now declares node EXPAND_VOLUME without the controller's`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("expand printed %q; want it to say %s", out.String(), want)
		}
	}
}
