package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume with a block-device capability beside another is refused by Nomad's registration
// when its plugin confirms the capabilities it is asked (Nomad's compareCapabilities; against
// Nomad 2.0.5: TestNomadRegistersTheExportOfEveryVolumeKind), and Nomad's refusal names neither
// the volume nor a way out. volctl took such a volume and said nothing: `volctl nomad register`
// (and its --dry-run) now warn before Nomad is asked, naming the two capabilities and what to
// do; a volume of one capability, or of two file-system ones, is not warned of.
func TestNomadRegisterWarnsOfCapabilitiesNomadRefuses(t *testing.T) {
	h := hostpathDriverHarness(t)
	block := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}
	fs := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	reader := spec.Capability{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}
	for id, caps := range map[string][]spec.Capability{"both": {block, fs}, "raw": {block}, "files": {fs, reader}} {
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", Capabilities: caps}); err != nil {
			t.Fatal(err)
		}
	}
	for _, dryRun := range []bool{true, false} {
		for _, id := range []string{"both", "raw", "files"} {
			ios, _, _, errOut := iostreams.Test()
			if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: newFakeNomad(t).client, Volumes: []string{id}, DryRun: dryRun}); err != nil {
				t.Fatalf("nomad register %s (dry run %v): %v", id, dryRun, err)
			}
			warned := errOut.String()
			if id != "both" {
				if strings.Contains(warned, "Nomad may refuse") {
					t.Errorf("nomad register %s (dry run %v) warned of its capabilities: %s", id, dryRun, warned)
				}
				continue
			}
			for _, want := range []string{`volume "both": Nomad may refuse it`, "single-node-writer/block-device is beside single-node-writer/file-system",
				"was not requested but was validated by the controller", "`volctl volume deregister both`"} {
				if !strings.Contains(warned, want) {
					t.Errorf("nomad register both (dry run %v) warned %q\nwant it to say %q", dryRun, warned, want)
				}
			}
		}
	}
}

// hostpathDriverHarness is a CLI harness whose plugin "hp" answers as the driver the fake
// Nomad's plugin is (volctl's hostpath), registered as a monolith.
func hostpathDriverHarness(t *testing.T) *cliHarness {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "hostpath.csi.volctl.dev" // the driver the fake Nomad's plugin is
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	h := &cliHarness{ctx: context.Background(), state: t.TempDir() + "/state"}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return h
}
