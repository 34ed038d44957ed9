package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
)

// A hostpath plugin registered by its socket, with no exec block, is exported as the process
// serving it answered: --enable-attach when it attaches, --max-volumes when it states a limit.
// Before, the plugin job had neither, whatever the plugin offered: Nomad's plugin attached
// nothing and took any number of volumes on the node.
func TestExportNomadPluginJobServesAsThePluginWasServed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    hostpath.Config
		want   string
		absent []string
	}{
		{"attach and a limit", hostpath.Config{EnableAttach: true, MaxVolumes: 3}, `"--node-id", "edge-7", "--enable-attach", "--max-volumes", "3"]`, nil},
		{"a limit alone", hostpath.Config{MaxVolumes: 2}, `"--node-id", "edge-7", "--max-volumes", "2"]`, []string{"--enable-attach"}},
		{"neither", hostpath.Config{}, `"--node-id", "edge-7"]`, []string{"--enable-attach", "--max-volumes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := exportHostpathVolume(t, newCLIHarness(t), tc.cfg, nil, func(o *ExportNomadOptions) { o.Plugin.Root = root })
			src, err := os.ReadFile(filepath.Join(dir, "plugin-hp.nomad.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			args := ""
			for _, l := range strings.Split(string(src), "\n") {
				if strings.Contains(l, "args") {
					args = l
				}
			}
			if !strings.HasSuffix(args, tc.want) {
				t.Errorf("plugin job's args should end %s:\n%s", tc.want, args)
			}
			for _, a := range tc.absent {
				if strings.Contains(args, a) {
					t.Errorf("plugin job's args pass %s, which the plugin was not served with:\n%s", a, args)
				}
			}
		})
	}
}

// An exec block's --enable-attach is read as serve reads it: --enable-attach=true attaches,
// --enable-attach=false after it does not.
func TestExportNomadPluginJobReadsTheExecBlocksAttachAsServeDoes(t *testing.T) {
	for args, want := range map[string]bool{
		"--enable-attach":                           true,
		"--enable-attach=true":                      true,
		"--enable-attach=1":                         true,
		"--enable-attach=false":                     false,
		"--enable-attach --enable-attach=false":     false,
		"--enable-attach=false --enable-attach":     true,
		"--enable-attachments":                      false,
		"--root /r --node-id n1 --max-volumes=2 -v": false,
	} {
		got := slices.Contains(servedAs(strings.Fields(args), true, nil), "--enable-attach")
		if got != want {
			t.Errorf("exec args %q: plugin job attaches %v, want %v", args, got, want)
		}
	}
}

// Two files of one export that hold one Nomad job are refused, naming both, before any file
// is written: a group named after volctl's plugin job ("plugin-hp", beside plugin "hp"), and
// two groups whose names differ only in what a job ID makes dashes ("my web", "my-web").
// Before, both files were written, and running the second replaced the first in Nomad.
func TestExportRefusesTwoFilesOfOneNomadJob(t *testing.T) {
	groupFile := func(t *testing.T, dir, name string) string {
		t.Helper()
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".hcl")
		src := `group "` + name + `" {
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
`
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	for _, tc := range []struct {
		name   string
		groups []string
		job    string
		whats  []string
	}{
		{"a group and the plugin's job", []string{"plugin-hp"}, "plugin-hp", []string{`group "plugin-hp"`, `plugin "hp"`}},
		{"two groups", []string{"my web", "my-web"}, "my-web", []string{`group "my web"`, `group "my-web"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCLIHarness(t)
			dir := t.TempDir()
			exportHostpathVolume(t, h, hostpath.Config{}, nil, func(o *ExportNomadOptions) { o.Plugin.Root = dir }) // registers hp, creates hv
			args := []string{"export", "nomad", "--plugin-root", dir, "--volctl-path", "/usr/local/bin/volctl"}
			for _, g := range tc.groups {
				args = append(args, "--group-file", groupFile(t, dir, g))
			}
			out := filepath.Join(dir, "out")
			args = append(args, "--out", out)
			code, stdout, stderr := h.runReported(args...)
			if code == 0 || !strings.Contains(stderr, `Nomad job "`+tc.job+`"`) {
				t.Fatalf("export nomad of two files of job %q: exit %d\n%s%s\nwant it refused naming the job", tc.job, code, stdout, stderr)
			}
			for _, w := range tc.whats {
				if !strings.Contains(stderr, w) {
					t.Errorf("the refusal does not name %s:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("refused, yet %s was made", out)
			}
		})
	}
}
