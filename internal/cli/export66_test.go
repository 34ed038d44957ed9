package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin that reports the largest capacity CSI holds (int64's maximum, as some plugins
// answer for storage of no fixed size) for a volume created with no capacity range: volctl
// records it, and `volctl export nomad` of the volume must write a file (or refuse it naming
// the capacity and what to do), never fail as "a volctl bug". It failed so, and `export nomad
// --all` with it. Found by helper review66.
func TestExportOfAVolumeAtTheLargestCapacity(t *testing.T) {
	h := newCLIHarness(t)
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DefaultVolumeSize = math.MaxInt64 })
	v, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "big", Name: "big", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
	if err != nil {
		t.Fatal(err)
	}
	if v.CapacityBytes != math.MaxInt64 {
		t.Skipf("recorded capacity %d, not the plugin's", v.CapacityBytes)
	}
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"big"}; o.NoPluginJob = true; dir = o.OutDir })
	if err != nil {
		t.Fatalf("export nomad of a volume its plugin reports at %d bytes: %v\nstderr: %s", v.CapacityBytes, err, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "volume-big.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	read, diags := spec.ParseVolume("volume-big.hcl", data, spec.VerbRegister)
	if diags.HasErrors() {
		t.Fatalf("the exported file does not read back: %s\n%s", diags.Error(), data)
	}
	if read.CapacityMin != spec.MaxNomadSize || !strings.Contains(stderr, "past the largest Nomad reads") {
		t.Errorf("exported capacity_min reads as %d, want %d, the largest Nomad reads, with a note saying so; stderr:\n%s", read.CapacityMin, int64(spec.MaxNomadSize), stderr)
	}
}

// A volume with a block-device capability beside a file-system one gets export's note (Nomad
// may refuse its file) with a way out: keep one capability block in the file, then
// `volctl volume deregister ID` and `volctl volume register` of the edited file. Exported
// without --include-secrets, as by default, the file holds [REDACTED] for each secret, which
// `volctl volume register` refuses: followed as written, the advice forgets the volume (its
// secrets with it, held nowhere else now) and then fails, and --include-secrets can no longer
// be given, the volume gone. The note must say to export with --include-secrets first (or the
// edited file must register). Found by helper review66.
func TestCapabilitiesNoteAdviceWorksOnAFileWithPlaceholders(t *testing.T) {
	h := newCLIHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}},
		Secrets: spec.Secrets{"token": "s3cr3t-only-here"},
	}); err != nil {
		t.Fatal(err)
	}
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.NoPluginJob = true; dir = o.OutDir })
	if err != nil {
		t.Fatal(err)
	}
	var capsNote string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "keep in the file only that capability block") {
			capsNote = l
		}
	}
	if capsNote == "" {
		t.Fatalf("no capabilities note:\n%s", stderr)
	}
	// Follow it: keep the block-device capability block alone.
	path := filepath.Join(dir, "volume-db.hcl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "capability {\n  access_mode     = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n", "", 1)
	if edited == string(data) {
		t.Fatalf("could not drop the file-system capability block:\n%s", data)
	}
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	_, diags := spec.ParseVolume(path, []byte(edited), spec.VerbRegister)
	if diags.HasErrors() && !strings.Contains(capsNote, "--include-secrets") {
		t.Errorf("export's note advises `volctl volume deregister db` and `volctl volume register` of the edited file, which, exported without --include-secrets, "+
			"is refused (%s): the volume and its secrets are forgotten and the file cannot bring them back; the note never says to export with --include-secrets first.\nnote: %s",
			diags.Error(), capsNote)
	}
}
