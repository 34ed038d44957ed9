package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// twoHostpathPlugins serves volctl's hostpath plugin twice, on node edge-7, each over a root of
// its own, registers them by socket alone (no exec block: the agent's args are not known) as
// plugins hp and hp2, and creates volume hv on hp and hv2 on hp2.
func twoHostpathPlugins(t *testing.T, h *cliHarness) {
	t.Helper()
	for _, p := range []struct{ plugin, vol string }{{"hp", "hv"}, {"hp2", "hv2"}} {
		srv := hostpathtest.Start(t, hostpath.Config{NodeID: "edge-7", Mounter: &hostpathtest.FakeMounter{}})
		if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: p.plugin, Type: spec.PluginMonolith, Socket: strings.TrimPrefix(srv.Endpoint, "unix://")}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: p.vol, Name: p.vol, Type: "csi", PluginID: p.plugin,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExportNomadPluginRootIsNotGivenToTwoHostpathPlugins: exporting the volumes of two of
// volctl's hostpath plugins, each serving a root of its own and registered by its socket, is
// refused for want of a root ("no --root for the plugin (--plugin-root)"); followed, that
// advice writes both plugins' system jobs with `--root` the one directory given, exit 0,
// "Wrote plugin", so one of the two Nomad plugins serves the other's root, where none of its
// own volumes is (each NOT_FOUND to it) and the other's volumes are, under a second plugin ID.
// --plugin-root is one flag for every plugin job of the export (exportPluginJobs copies it into
// each). Correct: --plugin-root that would be given to more than one hostpath plugin job is
// refused, naming the plugins and saying to export each plugin's volumes on its own (or
// --no-plugin-job), nothing written; never two plugin jobs serving one root.
// Found by helper review80 (export).
func TestExportNomadPluginRootIsNotGivenToTwoHostpathPlugins(t *testing.T) {
	h := newCLIHarness(t)
	twoHostpathPlugins(t, h)
	_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes, o.Plugin.VolctlPath = []string{"hv", "hv2"}, "/usr/local/bin/volctl"
	})
	if err == nil || !strings.Contains(err.Error(), "--plugin-root") {
		t.Fatalf("precondition: export of socket-registered hostpath plugins without --plugin-root: %v, want a refusal naming --plugin-root", err)
	}
	root := filepath.Join(t.TempDir(), "srv-hp")
	var out string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes, o.Plugin.VolctlPath, o.Plugin.Root, out = []string{"hv", "hv2"}, "/usr/local/bin/volctl", root, o.OutDir
	})
	if err == nil {
		hp, _ := os.ReadFile(filepath.Join(out, "plugin-hp.nomad.hcl"))
		hp2, _ := os.ReadFile(filepath.Join(out, "plugin-hp2.nomad.hcl"))
		t.Fatalf("export nomad --plugin-root %s of two hostpath plugins' volumes: exit 0, the one root given to both plugin jobs, "+
			"so one Nomad plugin serves the other's root and none of its own volumes:\n%s\n%s\n%s", root, hp, hp2, stderr)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Errorf("refused (%v), yet %s was made", err, out)
	}
	if !strings.Contains(err.Error(), `"hp"`) || !strings.Contains(err.Error(), `"hp2"`) || ExitCode(err) != ExitUsage {
		t.Errorf("the refusal of one --plugin-root for two plugins: %v (exit %d); want both named, exit 2", err, ExitCode(err))
	}
	// The advice followed: each plugin's volumes exported on their own, each with its root.
	for _, one := range []struct{ vol, plugin string }{{"hv", "hp"}, {"hv2", "hp2"}} {
		own := filepath.Join(t.TempDir(), "srv-"+one.plugin)
		var dir string
		if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
			o.Volumes, o.Plugin.VolctlPath, o.Plugin.Root, dir = []string{one.vol}, "/usr/local/bin/volctl", own, o.OutDir
		}); err != nil {
			t.Fatalf("export of %s alone with its --plugin-root, as advised: %v", one.vol, err)
		}
		job, err := os.ReadFile(filepath.Join(dir, "plugin-"+one.plugin+".nomad.hcl"))
		if err != nil || !strings.Contains(string(job), `"--root", "`+own+`"`) {
			t.Errorf("plugin %s's job, exported alone: %v\n%s\nwant --root %s", one.plugin, err, job, own)
		}
	}
}

// TestExportRefusesAGroupJobAndThePluginJobOfOneNomadJobInTheDefaultNamespace: sameJob keys each
// job file by its namespace as written and its ID, "" standing for the namespace of the request
// (`nomad job run` with no NOMAD_NAMESPACE: the default one). The hostpath plugin's system job
// names no namespace; a group whose volumes were handed over to Nomad's default namespace names
// "default" (TestGroupJobOfVolumesHandedOverToTheDefaultNamespaceNamesIt). So a group named
// "plugin-hp" beside plugin hp's job, refused when its volume is volctl's alone
// (TestExportRefusesTwoFilesOfOneNomadJob), is written once the volume has been handed over:
// exit 0, both files "Wrote", and `nomad job run` of the second, in the default namespace as
// the first, replaces the first in Nomad (the plugin that serves the group's volume, or the group
// itself). Correct: a job file naming no namespace is the default namespace's too when another
// names "default" (or the check compares the namespace each file's job lands in), so the pair is
// refused, naming Nomad job "plugin-hp", both files and nothing written.
// Found by helper review80 (export).
func TestExportRefusesAGroupJobAndThePluginJobOfOneNomadJobInTheDefaultNamespace(t *testing.T) {
	h := newCLIHarness(t)
	dir := t.TempDir()
	exportHostpathVolume(t, h, hostpath.Config{}, nil, func(o *ExportNomadOptions) { o.Plugin.Root = dir }) // registers hp, creates hv
	if _, err := h.e.HandOver(h.ctx, "hv", engine.HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}, false, nil); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "plugin-hp.hcl")
	if err := os.WriteFile(file, []byte(`group "plugin-hp" {
  count = 1
  volume "data" {
    type            = "csi"
    source          = "hv"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "/srv"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := h.runReported("export", "nomad", "--plugin-root", dir, "--volctl-path", "/usr/local/bin/volctl", "--group-file", file, "--out", out)
	if code == 0 {
		group, _ := os.ReadFile(filepath.Join(out, "job-plugin-hp.nomad.hcl"))
		plugin, _ := os.ReadFile(filepath.Join(out, "plugin-hp.nomad.hcl"))
		t.Fatalf("export nomad of group \"plugin-hp\" (its volume handed over to the default namespace) beside plugin hp's job: exit 0, "+
			"both written as Nomad job \"plugin-hp\", one in namespace \"default\" and one in the request's (the default one unless NOMAD_NAMESPACE says otherwise), "+
			"so running the second replaces the first:\n%s%s\n%s\n%s", stdout, stderr, group, plugin)
	}
	if !strings.Contains(stderr, `Nomad job "plugin-hp"`) {
		t.Errorf("exit %d, but the refusal does not name Nomad job \"plugin-hp\":\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("refused, yet %s was made", out)
	}
}
