package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestSplitPluginHalvesInTwoFilesAreOnePlugin: a split plugin's controller half in one file
// and its node half in another is one plugin (docs/specs.md: "in one file or two"), and `plugin
// register ctrl.hcl node.hcl` registers it so. `validate` of the same two files refused them as
// one ID "declared in both", advising each "its own ID" (which would break the split plugin),
// where its help says it refuses only what plugin register refuses. Found by helper review71.
func TestSplitPluginHalvesInTwoFilesAreOnePlugin(t *testing.T) {
	dir := writeSpecs(t, map[string]string{
		"ctrl.hcl": "plugin \"ebs\" {\n  type   = \"controller\"\n  socket = \"/run/ebs-c.sock\"\n}\n",
		"node.hcl": "plugin \"ebs\" {\n  type   = \"node\"\n  socket = \"/run/ebs-n.sock\"\n}\n",
	})
	files := []string{filepath.Join(dir, "ctrl.hcl"), filepath.Join(dir, "node.hcl")}

	// What plugin register makes of the two files: one split plugin.
	ios, _, _, _ := iostreams.Test()
	o := &PluginRegisterOptions{IO: ios, ReadFile: os.ReadFile, Files: files}
	got, err := o.plugins(context.Background())
	if err != nil {
		t.Fatalf("plugin register refuses the two halves: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("plugin register reads them as %d plugins, want one split plugin: %+v", len(got), got)
	}

	ios, _, out, errOut := iostreams.Test()
	err = validateRun(context.Background(), &ValidateOptions{IO: ios, Files: files, ReadFile: os.ReadFile})
	if code := ExitCode(err); code != 0 {
		t.Errorf("validate of the two halves plugin register takes: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut.String(), "Duplicate plugin ID") {
		t.Errorf("validate says the split plugin's halves are a duplicate ID:\n%s", errOut)
	}
}

// TestSplitPluginHalvesThatDoNotJoinAreRefusedByValidate: halves in two files that plugin register
// refuses to join (both on one socket), or a third block of the ID, are refused by validate too.
func TestSplitPluginHalvesThatDoNotJoinAreRefusedByValidate(t *testing.T) {
	dir := writeSpecs(t, map[string]string{
		"ctrl.hcl":  "plugin \"ebs\" {\n  type   = \"controller\"\n  socket = \"/run/ebs.sock\"\n}\n",
		"node.hcl":  "plugin \"ebs\" {\n  type   = \"node\"\n  socket = \"/run/ebs.sock\"\n}\n",
		"node2.hcl": "plugin \"ebs\" {\n  type   = \"node\"\n  socket = \"/run/ebs-n.sock\"\n}\n",
	})
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, tt := range []struct {
		files []string
		says  string
	}{
		{[]string{path("ctrl.hcl"), path("node.hcl")}, "Split plugin halves do not join"},
		{[]string{path("ctrl.hcl"), path("node2.hcl"), path("node.hcl")}, "Duplicate plugin ID"},
	} {
		ios, _, _, _ := iostreams.Test()
		_, perr := (&PluginRegisterOptions{IO: ios, ReadFile: os.ReadFile, Files: tt.files}).plugins(context.Background())
		if perr == nil {
			t.Fatalf("premise: plugin register takes %q", tt.files)
		}
		ios, _, out, errOut := iostreams.Test()
		err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: tt.files, ReadFile: os.ReadFile})
		if code := ExitCode(err); code != ExitUsage || !strings.Contains(errOut.String(), tt.says) {
			t.Errorf("validate %q, which plugin register refuses (%v): exit %d; want %d and %q\nstdout:\n%s\nstderr:\n%s",
				tt.files, perr, code, ExitUsage, tt.says, out, errOut)
		}
	}
}
