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
