package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// Nomad has db from before with volctl's two capabilities, listed in the other order (as a
// hand-written spec may list them). Nomad places a job by whether a capability is among the
// volume's, whatever their order: nothing a job relies on is replaced.
func TestNomadRegisterCapabilitiesInAnotherOrderAreNotReplaced(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	t.Cleanup(func() { hostpath.UnmountAll(h.state) })
	srv := hostpathtest.Start(t, hostpath.Config{NodeID: "n1"})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: strings.TrimPrefix(srv.Endpoint, "unix://")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}, {AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	a := newFakeNomad(t)
	nomadHasDBFromBefore(t, h, a, map[string]any{
		"RequestedCapabilities": []any{
			map[string]any{"AccessMode": "multi-node-multi-writer", "AttachmentMode": "file-system"},
			map[string]any{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"},
		},
		"RequestedCapacityMin": float64(10 << 20),
	})
	out, errOut, err := registerIn(h, a)
	if err != nil {
		t.Fatal(err)
	}
	// (The note that the secrets of a copy registered before the handover were replaced is
	// another matter, said whatever the capabilities.)
	if strings.Contains(errOut, "replaced what Nomad's copy had") || strings.Contains(errOut, "capabilities") {
		t.Errorf("register over Nomad's copy with the same capabilities in another order:\n%s%s\nsays it replaced them", out, errOut)
	}
}
