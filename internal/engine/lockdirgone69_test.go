package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/store"
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

// A state dir on a read-only file system whose locks directory is not there (a
// backup restored without it, the lock files being ephemeral) opens (Open: "A read-only state
// dir without its lock dir can still be read"). Every command that would change it must say
// what TestReadOnlyStateDirLockNotMadeSaysTheStateDirIsReadOnly promises: `volctl can read the
// state there but not change it`. locker.dirBack, new this round, tried to make the directory,
// and its EROFS was returned bare, not through onReadOnly, saying the locks directory "was
// removed" (nobody removed it under this process) and naming no way out. Found by helper
// review69.
func TestReadOnlyStateDirWithoutLocksDirSaysReadOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	reopenedReadOnly(t, h, func() {
		if err := os.RemoveAll(filepath.Join(h.dir, lockDir)); err != nil {
			t.Fatal(err)
		}
	})
	fresh := volume("fresh")
	fresh.ExternalID = "vol-fresh"
	_, regErr := h.e.RegisterVolume(h.ctx, fresh)
	_, claimErr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	_, _, agentErr := h.e.LockAgent()
	for what, err := range map[string]error{"register of a new volume": regErr, "claim": claimErr, "the agent's lock": agentErr} {
		if !errors.Is(err, store.ErrReadOnlyFS) || !strings.Contains(err.Error(), "volctl can read the state there but not change it") ||
			strings.Contains(err.Error(), "locks directory") {
			t.Errorf("%s on a read-only state dir without its locks directory: %v; want the state dir named read-only, as with the locks directory there", what, err)
		}
	}
}
