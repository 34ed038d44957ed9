package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecFileGivenTwiceIsNamed: one spec file given twice (`volctl validate db.hcl
// ./db.hcl`, a glob and a name, a symlink to it) was told its volume "is declared in both
// db.hcl and ./db.hcl" and to "give each volume its own ID", which no edit of the file could
// do, and register repeated every diagnostic of the file twice. It is a usage error naming
// both arguments and saying to give the file once, as standard input given twice is.
func TestSpecFileGivenTwiceIsNamed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "db.hcl")
	if err := os.WriteFile(file, []byte("id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"p\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.hcl")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.hcl")
	for _, args := range [][]string{
		{"validate", file, file},
		{"validate", file, dir + "/./db.hcl"},
		{"validate", file, link},
		{"volume", "create", file, other, link},
		{"volume", "register", link, file},
		{"plugin", "register", file, file},
	} {
		_, err := execRoot(t, append([]string{"--state-dir", filepath.Join(dir, "state")}, args...)...)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "is given twice") || !strings.Contains(err.Error(), "give it once") {
			t.Errorf("volctl %s: %v (exit %d); want exit %d saying the file is given twice", strings.Join(args, " "), err, ExitCode(err), ExitUsage)
		}
	}
}
