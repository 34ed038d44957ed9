package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestPluginStatusOfAPluginWithAHugeVersionKeepsTheOthersRows: a plugin answering GetPluginInfo
// with a vendor_version of 1 MiB (CSI leaves it unbounded) beside an honest one. `plugin
// status` printed it whole, and the table padded every row to its width: the honest plugin's
// row was a megabyte of spaces. It is kept cut at 256 bytes, and the other rows stay short.
func TestPluginStatusOfAPluginWithAHugeVersionKeepsTheOthersRows(t *testing.T) {
	ctx := context.Background()
	_, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()))
	cfg := csitest.DefaultMemConfig()
	cfg.Version = strings.Repeat("v", 1<<20)
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "huge", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	f.engine = e
	if err := runCmd(t, NewRootCmd(f), "plugin", "status"); err != nil {
		t.Fatalf("plugin status: %v (%s)", err, errOut)
	}
	var mem bool
	for line := range strings.Lines(out.String()) {
		if len(line) > 2048 {
			t.Errorf("a row of %d bytes: %.120q...", len(line), line)
		}
		mem = mem || strings.HasPrefix(line, "mem ")
	}
	if !mem {
		t.Errorf("no row of plugin mem in\n%.2000s", out)
	}
}
