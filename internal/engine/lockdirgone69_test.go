package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// The locks directory removed by hand under a running engine (an agent, the TUI): every lock
// failed with a bare "no such file or directory" until the process started again, which makes
// the directory. The directory is made again, as at start-up, and the command goes on: a lock
// held across the removal is found gone by its holder's stillHeld, as a lock file removed is.
func TestLocksDirRemovedUnderARunningEngineIsMadeAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	if err := os.RemoveAll(filepath.Join(h.dir, lockDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a-0"}); err != nil {
		t.Fatalf("claim after the locks directory was removed: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(h.dir, lockDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("locks directory after the claim: %v, %v; want it made again, 0700", fi, err)
	}
}
