package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin whose CreateVolume answers a volume_context value that is literally "[REDACTED]"
// (a plugin that redacts what it echoes): the volume is volctl's, and export nomad
// --include-secrets, the way the refusal itself names, writes it, and it reads back (the
// context is the plugin's: a placeholder there is a warning).
func TestExportIncludeSecretsWritesAPluginsPlaceholderContext(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.CreateContext = map[string]string{"auth": spec.Redacted}
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	h := &cliHarness{ctx: t.Context(), state: filepath.Join(t.TempDir(), "state")}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	var dir string
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.IncludeSecrets = true; dir = o.OutDir }); err != nil {
		t.Fatalf("export --include-secrets: %.700v", err)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "volume-db.hcl"))
	if _, diags := spec.ParseVolume("volume-db.hcl", src, spec.VerbRegister); diags.HasErrors() {
		t.Errorf("the --include-secrets export does not read back: %v", diags)
	}
}

// A volume registered before the change with a secret and a mount flag "[REDACTED]" (what an
// old export read back recorded): export --include-secrets said "a volctl bug"; it writes the
// file and names what the volume is recorded with, and what to do.
func TestExportIncludeSecretsOfARecordedPlaceholderIsNoVolctlBug(t *testing.T) {
	h := newCLIHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{spec.Redacted}},
		Secrets:      spec.Secrets{"token": spec.Redacted}}); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.IncludeSecrets = true })
	if err != nil {
		t.Errorf("export --include-secrets of a volume holding the placeholder: %.900v", err)
	}
	// What the volume is recorded with is named, with what to do.
	for _, want := range []string{`volume "db": its secret "token" is recorded as [REDACTED]`, `volume "db": its mount_flags[0] is recorded as [REDACTED]`, "volctl volume register"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("export does not say %q:\n%s", want, stderr)
		}
	}
}

// So too a volume an older volctl recorded with the placeholder and a blank about it, which
// volctl now refuses to read as it refuses the placeholder (spec.IsPlaceholder): the export
// writes the file, and names the secret and the flag.
func TestExportIncludeSecretsOfARecordedPlaceholderWithABlank(t *testing.T) {
	h := newCLIHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", spec.Redacted + " "}},
		Secrets:      spec.Secrets{"token": " " + spec.Redacted}}); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.IncludeSecrets = true })
	if err != nil {
		t.Errorf("export --include-secrets of a volume holding the placeholder with a blank: %.900v", err)
	}
	for _, want := range []string{`its secret "token" is recorded as`, `its mount_flags[1] is recorded as`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("export does not say %q:\n%s", want, stderr)
		}
	}
}
