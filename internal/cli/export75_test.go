package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadKeepsEditsKeptByAnEarlierExport: keepEdited moves a file that differs from
// the export to FILE.bak, replacing any FILE.bak already there. A user's edits kept as .bak
// by one re-export are lost at the next export that writes other content (a volume expanded,
// other --datacenter): the file moved over them is volctl's own earlier output, unedited, and
// the line says only that the file there "is kept as FILE.bak". The edits, the one thing the
// .bak is for, are gone without a word. Correct behaviour: an existing FILE.bak that holds
// something else is never replaced silently: the file goes to FILE.bak.1, named. Found by
// helper review75.
func TestExportNomadKeepsEditsKeptByAnEarlierExport(t *testing.T) {
	h := newCLIHarness(t)
	exportVolume(t, h)
	dir := filepath.Join(t.TempDir(), "out")
	export := exportDBTo(t, h, dir)
	export()
	file := filepath.Join(dir, "volume-db.hcl")
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := string(exported) + "# my edit: the production parameters\n"
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	// The volume changes, so the next export writes other content: the edited file goes to .bak.
	if _, err := h.e.ExpandVolume(h.ctx, "db", 2<<30, 0); err != nil {
		t.Fatalf("changing the volume between exports: %v", err)
	}
	if out := export(); !strings.Contains(out, "kept as "+file+".bak") {
		t.Fatalf("second export did not keep the edited file: %q", out)
	}
	if b, _ := os.ReadFile(file + ".bak"); string(b) != edited {
		t.Fatalf("precondition: .bak = %q, want the edited file", b)
	}
	// And again: the file there now is the second export's own output, never edited.
	if _, err := h.e.ExpandVolume(h.ctx, "db", 3<<30, 0); err != nil {
		t.Fatalf("changing the volume between exports: %v", err)
	}
	out := export()
	if b, _ := os.ReadFile(file + ".bak"); string(b) != edited {
		t.Errorf("the user's edits, kept as %s.bak by the previous export, are gone after the next one (it said %q)", file, out)
	}
	if !strings.Contains(out, "kept as "+file+".bak.1") {
		t.Errorf("the third export does not say where it kept the file it moved: %q", out)
	}
	if b, _ := os.ReadFile(file + ".bak.1"); len(b) == 0 || string(b) == edited {
		t.Errorf("%s.bak.1 = %q, want the second export's own output", file, b)
	}
}

// TestExportNomadNodeIDOtherThanTheVolumesTopologyIsNotSilent: --node-id sets the node the
// exported hostpath plugin job serves, while each volume file keeps the node its recorded
// topology names as topology_request.required. Given a --node-id other than that node (the
// flag is easily taken for --nomad-node, or followed from the refusal "its volumes name 2
// nodes in their topology; export them per node with --node-id"), export exits 0 without a
// word: in Nomad the plugin reports node edge-8, the volume requires edge-7, and no alloc
// using the volume can ever be placed. It is refused (exit 2), nothing written, naming the
// volume, both nodes and the --node-id that works, and the test follows it. Found by helper
// review75.
func TestExportNomadNodeIDOtherThanTheVolumesTopologyIsNotSilent(t *testing.T) {
	h := newCLIHarness(t)
	hostpathVolumeToExport(t, h, hostpath.Config{}, &spec.Exec{Command: "volctl",
		Args: []string{"plugin", "serve", "hostpath", "--root", t.TempDir(), "--node-id", "edge-7"}})
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"hv"}
		o.Plugin.VolctlPath = "/usr/local/bin/volctl"
		o.Plugin.NodeID = "edge-8"
		dir = o.OutDir
	})
	if err == nil || ExitCode(err) != ExitUsage {
		t.Fatalf("export with --node-id edge-8 of volume hv, whose topology names edge-7: exit %d, %v; want refused, exit 2 (stderr %q)", ExitCode(err), err, stderr)
	}
	for _, want := range []string{`"edge-7"`, `"edge-8"`, `volume "hv"`, "--node-id edge-7"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %s", err, want)
		}
	}
	if _, serr := os.Stat(filepath.Join(dir, "volume-hv.hcl")); serr == nil {
		t.Errorf("the refused export wrote volume-hv.hcl")
	}
	// As advised: --node-id edge-7.
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"hv"}
		o.Plugin.VolctlPath = "/usr/local/bin/volctl"
		o.Plugin.NodeID = "edge-7"
		dir = o.OutDir
	}); err != nil {
		t.Fatalf("the advised export with --node-id edge-7: %v", err)
	}
	psrc, rerr := os.ReadFile(filepath.Join(dir, "plugin-hp.nomad.hcl"))
	if rerr != nil || !strings.Contains(string(psrc), `"--node-id", "edge-7"`) {
		t.Fatalf("the advised export's plugin job: %v\n%s", rerr, psrc)
	}
}

// TestKeepEditedWhereTheFileSystemCannotRenameWithoutReplacing: an --out on NFS (or FUSE
// without rename2, 9p) answers renameat2's RENAME_NOREPLACE EINVAL. keepEdited, which moves an
// edited file aside without replacing an earlier .bak, stopped the export there ("keeping X
// ... as X.bak: invalid argument") where a plain rename had kept it. It falls back to a rename
// to a name found free, still never over a .bak holding something else. Found by helper
// review75.
func TestKeepEditedWhereTheFileSystemCannotRenameWithoutReplacing(t *testing.T) {
	was := renameExclusive
	t.Cleanup(func() { renameExclusive = was })
	renameExclusive = func(old, new string) error {
		return &os.LinkError{Op: "renameat2", Old: old, New: new, Err: unix.EINVAL}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "volume-db.hcl")
	for _, f := range []struct{ path, data string }{{file, "edited again"}, {file + ".bak", "edited first"}} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := keepEdited(file, []byte("exported"))
	if err != nil || kept != file+".bak.1" {
		t.Fatalf("keepEdited beside a .bak holding other edits = %q, %v; want %s", kept, err, file+".bak.1")
	}
	for path, want := range map[string]string{file + ".bak": "edited first", file + ".bak.1": "edited again"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}
}
