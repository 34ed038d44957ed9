package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestExpandOfAHandedOverVolumeWhosePluginIsDownIsRefusedAsHandedOver: volume "db" (1MiB,
// capacity_max 4MiB) is handed over to Nomad, and volctl's own instance of its plugin is not
// running (Nomad runs the plugin for its allocs now). `volctl volume expand db --size 2MiB`
// exits 1 with `plugin "mem": socket ... does not exist (is the plugin running?)`. Followed
// (the plugin started again), the same expand is refused, exit 4, because the volume is handed
// over to Nomad: the first refusal's advice could never work. expandVolumeStored's handover
// check, which its comment says is "refused first" (the own80g fix for a --limit advice the
// handover then refused), runs only after lockedVolume has connected to the plugin. A claim of
// the same volume, plugin down, is refused as handed over at once (exit 4). Correct: an expand
// that would change a handed-over volume is refused as handed over (exit 4, naming `volctl
// nomad release`) before the plugin is connected, never advised to start a plugin whose start
// leads to another refusal.
// Found by helper review80 (own80h), in this round's own change.
// Found by helper review80 (own80h), in this round's own change.
func TestExpandOfAHandedOverVolumeWhosePluginIsDownIsRefusedAsHandedOver(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, stop := csitest.Serve(t, csitest.WithServer(mem))
	h := &cliHarness{ctx: ctx, state: filepath.Join(t.TempDir(), "state"), mem: mem, stop: stop}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20, CapacityMax: 4 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.HandOver(ctx, "db", engine.HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}, false, nil); err != nil {
		t.Fatalf("hand over: %v", err)
	}
	stop() // volctl's instance of the plugin is not running
	code, out, errOut := h.runReported("volume", "expand", "db", "--size", "2MiB")
	if code == ExitOK {
		t.Fatalf("precondition: expand of a handed-over volume exited 0: %s", out)
	}
	if code == ExitConflict && strings.Contains(errOut, "handed over") && strings.Contains(errOut, "nomad release") {
		return
	}
	// The advice followed: the plugin started again.
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	code2, out2, errOut2 := h.runReported("volume", "expand", "db", "--size", "2MiB")
	t.Errorf("expand of volume db, handed over to Nomad, its plugin down: exit %d, stderr:\n  %s\n"+
		"followed (plugin started again): exit %d, stdout %q, stderr:\n  %s\n"+
		"want it refused as handed over at once (exit 4, naming `volctl nomad release`), as a claim is, not sent to start a plugin whose start leads to that refusal",
		code, strings.TrimSpace(errOut), code2, out2, strings.TrimSpace(errOut2))
}
