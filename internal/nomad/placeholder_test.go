package nomad

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/volctl/volctl/internal/spec"
)

// A file volctl export nomad wrote without --include-secrets holds SecretPlaceholder where each
// secret value and mount flag was (and where a context value held a secret). Read back by
// volctl (`volctl volume register` or `create` of it, or `volctl validate`), the placeholder
// was taken for the value: the volume was recorded with the secret "[REDACTED]" and the mount
// flag "[REDACTED]", which its plugin was then given as a credential and asked to mount with,
// and `volctl nomad register` sent on to Nomad. Each placeholder is refused, naming the secret,
// the flag or the context key and what to write instead; the file written with
// --include-secrets reads back as it was.
func TestExportPlaceholdersAreNotReadBackAsValues(t *testing.T) {
	v := spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "hostpath", ExternalID: "ext-1",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "password=hunter2-long"}},
		Secrets:      spec.Secrets{"token": "t0k3n-long-enough"},
		Context:      map[string]string{"export": "/srv/db"}}

	data, _, err := VolumeFile(v, false)
	if err != nil {
		t.Fatal(err)
	}
	got, diags := spec.NewParser().ParseVolume("volume-db.hcl", data, spec.VerbRegister)
	all := errorsOf(diags)
	if !diags.HasErrors() {
		t.Errorf("the export written without --include-secrets read back with no error: secrets %v, mount flags %v\n%s",
			got.Secrets.Plain(), got.MountOptions.MountFlags.Plain(), data)
	}
	for _, want := range []string{`secret "token"`, "mount_flags[0]", "mount_flags[1]", "--include-secrets", "placeholder"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors do not say %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "hunter2") || strings.Contains(all, "t0k3n") {
		t.Errorf("errors show a secret:\n%s", all)
	}

	// A create spec written with the placeholder (copied from such a file) is refused alike.
	create := `id = "db"
name = "db"
type = "csi"
plugin_id = "hostpath"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets { token = "` + spec.Redacted + `" }
`
	if _, diags := spec.NewParser().ParseVolume("db.hcl", []byte(create), spec.VerbCreate); !strings.Contains(errorsOf(diags), `secret "token"`) {
		t.Errorf("a create spec's secret of the placeholder: errors do not name it:\n%s", errorsOf(diags))
	}

	// A context value the export wrote as the placeholder (one its plugin echoed a secret into)
	// is warned about, naming it, not refused: the context is the plugin's, and a plugin may
	// answer the placeholder itself (TestExportIncludeSecretsWritesAPluginsPlaceholderContext).
	ctx := strings.Replace(string(data), `"/srv/db"`, `"`+spec.Redacted+`"`, 1)
	_, diags = spec.NewParser().ParseVolume("volume-db.hcl", []byte(ctx), spec.VerbRegister)
	warned := false
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning && d.Summary == spec.PlaceholderSummary && strings.Contains(d.Detail, `context "export"`) {
			warned = true
		}
	}
	if !warned || strings.Contains(errorsOf(diags), `context "export"`) {
		t.Errorf("a context value of the placeholder: want a warning naming it, not an error:\n%s", diags)
	}

	// With --include-secrets the values read back as they were.
	data, _, err = VolumeFile(v, true)
	if err != nil {
		t.Fatal(err)
	}
	got, diags = spec.NewParser().ParseVolume("volume-db.hcl", data, spec.VerbRegister)
	if diags.HasErrors() {
		t.Fatalf("the export with --include-secrets: %s", errorsOf(diags))
	}
	if got.Secrets.Plain()["token"] != "t0k3n-long-enough" || len(got.MountOptions.MountFlags) != 2 {
		t.Errorf("the export with --include-secrets read back as secrets %d, mount flags %d", len(got.Secrets), len(got.MountOptions.MountFlags))
	}
}

func errorsOf(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			b.WriteString(d.Summary + ": " + d.Detail + "\n")
		}
	}
	return b.String()
}
