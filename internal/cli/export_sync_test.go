package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestExportFileIsSyncedBeforeAndAfterItsRename: an exported file is written to a temporary file
// renamed over the destination. Without an fsync of the temporary file before the rename, and
// of the directory after it, a power loss could leave an empty or partial file at the
// destination, or the old one after the command said it wrote the new one. (The nomad10 review
// found the rename unsynced.)
func TestExportFileIsSyncedBeforeAndAfterItsRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "volumes.hcl")
	var synced []string
	old := syncFile
	syncFile = func(f *os.File) error {
		if fi, err := f.Stat(); err == nil && !fi.IsDir() {
			if _, err := os.Stat(path); err == nil {
				t.Errorf("the file was synced after the rename")
			}
		}
		synced = append(synced, f.Name())
		return old(f)
	}
	defer func() { syncFile = old }()
	if err := writeFileAtomic(path, []byte("volume {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || filepath.Dir(synced[0]) != dir || synced[0] == path || !slices.Contains(synced, dir) {
		t.Fatalf("synced %q; want the temporary file in %s, then %s", synced, dir, dir)
	}
}
