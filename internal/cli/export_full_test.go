package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The output directory's file system is full: the export fails naming the file it could not
// write (not only the temporary file beside it, which is gone), that the file system holding it
// is full, and what to do; nothing half-written is left there. Before, the error was the
// temporary file's write error alone.
func TestExportNomadOnAFullDiskSaysWhatToDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs to fill")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	out := filepath.Join(mnt, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "fill"), make([]byte, 128<<10), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want ENOSPC", mnt, err)
	}
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
