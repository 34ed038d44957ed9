package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// TestCapabilitiesNoteAdviceKeepsAContextWrittenWithAPlaceholder: a volume with a block-device
// capability beside another gets a note from `export nomad` saying to keep one capability block
// in the file, `volctl volume deregister` it and `volctl volume register` the edited file. It
// says to export with --include-secrets first only when the volume has secrets or mount flags
// of its own (nomad.VolumeFile). But the export also writes the plugin's context with
// [REDACTED] wherever it holds a value the state keeps secret (another volume's secret, a
// plugin's exec env value: a storage pool's name the plugin answers in its context), and
// VolumeFile, given the context already scrubbed by the caller, cannot tell. Followed as
// written, the deregister forgets the real context (held nowhere else), and the register of the
// edited file records the placeholder as the volume's context, exit 0: every later stage and
// publish sends the plugin "[REDACTED]" instead of its own context. Correct: when the file's
// context holds a placeholder, the note says to export again with --include-secrets first (as
// it does for secrets and mount flags), so that the steps keep the context.
// Found by helper review82 (export).
func TestCapabilitiesNoteAdviceKeepsAContextWrittenWithAPlaceholder(t *testing.T) {
	const pool = "pool-7f3kq9"
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) { c.CreateContext = map[string]string{"pool": pool} })
	// Another volume whose secret is the pool's name: the state keeps that value secret.
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "vault", Name: "vault", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"pool": pool},
	}); err != nil {
		t.Fatal(err)
	}
	// db: no secrets, no mount flags; its context holds the pool's name.
	info, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if info.Context["pool"] != pool {
		t.Fatalf("precondition: db's context %v does not hold the pool", info.Context)
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
	if capsNote == "" || !strings.Contains(stderr, "its context holds a secret value") {
		t.Fatalf("precondition: no capabilities note, or no note of the context's placeholder:\n%s", stderr)
	}
	path := filepath.Join(dir, "volume-db.hcl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Follow the note: keep the block-device capability block alone, deregister, register.
	edited := strings.Replace(string(data), "capability {\n  access_mode     = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n", "", 1)
	if edited == string(data) {
		t.Fatalf("could not drop the file-system capability block:\n%s", data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := h.runReported("volume", "deregister", "db", "--yes"); code != 0 {
		t.Fatalf("volctl volume deregister db: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := h.runReported("volume", "register", path)
	if code != 0 {
		if !strings.Contains(capsNote, "--include-secrets") {
			t.Errorf("the advised register of the edited file failed (exit %d), db forgotten, and the note never said to export with --include-secrets first:\n%s%s\nnote: %s", code, out, errOut, capsNote)
		}
		return
	}
	got, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if got.Context["pool"] != pool && !strings.Contains(capsNote, "--include-secrets") {
		t.Errorf("followed as the export's note says, db is registered again with context %q (was %q): the deregister forgot the real context and the register recorded the file's placeholder, "+
			"which the plugin is now sent on every stage and publish; the note never says to export with --include-secrets first.\nnote: %s",
			got.Context["pool"], pool, capsNote)
	}
}

// TestExportNomadPluginRootNotInNFCIsNotWrittenAsAnotherPath: --plugin-root is written into the
// hostpath plugin job's args, and the HCL writer writes every string in Unicode normal form C.
// A root whose name is decomposed (a directory made by macOS tools, or synced from a Mac, is
// named in NFD: "cafe" + U+0301) is written precomposed, which to Linux is another path: the
// plugin Nomad runs serves a root that does not exist (or another directory), and every volume
// handed over is NOT_FOUND to it. The export says nothing, exit 0, "Wrote plugin". Volume files
// refuse a string not in NFC for this reason (VolumeFile: "Nomad would get another string");
// the plugin job does not check. Correct: the export refuses the root, naming --plugin-root and
// that it is not in NFC (the job file cannot hold it as given), with nothing written; or the
// job holds the root byte for byte.
// Found by helper review82 (export).
func TestExportNomadPluginRootNotInNFCIsNotWrittenAsAnotherPath(t *testing.T) {
	h := newCLIHarness(t)
	hostpathVolumeToExport(t, h, hostpath.Config{}, nil)
	root := filepath.Join(t.TempDir(), "cafe\u0301-volumes") // NFD, as macOS names it
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	var out string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes, o.Plugin.VolctlPath, o.Plugin.Root, o.Plugin.NomadNode, out = []string{"hv"}, "/usr/local/bin/volctl", root, "edge-7", o.OutDir
	})
	if err != nil {
		if !strings.Contains(err.Error(), "--plugin-root") {
			t.Errorf("refused, but without naming --plugin-root: %v", err)
		}
		return
	}
	src, rerr := os.ReadFile(filepath.Join(out, "plugin-hp.nomad.hcl"))
	if rerr != nil {
		t.Fatalf("export exit 0 but no plugin job: %v\n%s", rerr, stderr)
	}
	f, diags := hclsyntax.ParseConfig(src, "plugin-hp.nomad.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("the plugin job does not parse: %v\n%s", diags, src)
	}
	var args []string
	for _, jb := range f.Body.(*hclsyntax.Body).Blocks {
		for _, gb := range jb.Body.Blocks {
			for _, tb := range gb.Body.Blocks {
				for _, cb := range tb.Body.Blocks {
					if cb.Type != "config" {
						continue
					}
					v, d := cb.Body.Attributes["args"].Expr.Value(nil)
					if d.HasErrors() {
						t.Fatal(d)
					}
					for _, a := range v.AsValueSlice() {
						args = append(args, a.AsString())
					}
				}
			}
		}
	}
	i := slices.Index(args, "--root")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("the plugin job has no --root: %q\n%s", args, src)
	}
	if served := args[i+1]; served != root {
		_, statErr := os.Stat(served)
		t.Errorf("export nomad --plugin-root %+q: exit 0, but the plugin job, as Nomad reads it, serves --root %+q, another path (stat: %v): "+
			"the plugin would find none of the volumes; nothing said so:\n%s", root, served, statErr, stderr)
	}
}
