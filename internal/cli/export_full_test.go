package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// The output directory's file system is full: the export fails naming the file it could not
// write (not only the temporary file beside it, which is gone), that the file system holding it
// is full, and what to do; nothing half-written is left there. Before, the error was the
// temporary file's write error alone.
func TestExportNomadOnAFullDiskSaysWhatToDo(t *testing.T) {
	mnt := hostpathtest.Tmpfs(t, "size=64k")
	out := filepath.Join(mnt, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	hostpathtest.Fill(t, filepath.Join(mnt, "fill"))
	h := newCLIHarness(t)
	exportVolume(t, h)
	_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.OutDir = out })
	if err == nil {
		t.Fatal("export to a full file system succeeded")
	}
	for _, want := range []string{filepath.Join(out, "volume-db.hcl"), "no space left on device", "the file system holding " + out + " is full", "free space there", "run the export again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q\nwant it to say %q", err, want)
		}
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		t.Errorf("%s left in %s by an export that failed", e.Name(), out)
	}
}
