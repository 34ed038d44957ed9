package engine

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// TestReadOnlyStateDirLockNotMadeSaysTheStateDirIsReadOnly: a state dir on a read-only file
// system (a backup mounted read-only, a read-only bind) is read; every command that would
// change it is refused, saying `volctl can read the state there but not change it` and what to
// do. A command whose lock file was not made there before the file system went read-only
// (the register of a new volume, the delete of a snapshot never deleted before, the agent on a
// state dir no agent ran on) failed opening it instead, before the store could say so: `lock
// volume "fresh": open .../locks/volume-fresh.lock: read-only file system`, naming a file the
// user never made and no way out. Now they say what the others say.
func TestReadOnlyStateDirLockNotMadeSaysTheStateDirIsReadOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db")) // its lock file is made; "fresh"'s is not
	reopenedReadOnly(t, h, nil)
	fresh := volume("fresh")
	fresh.ExternalID = "vol-fresh"
	_, regErr := h.e.RegisterVolume(h.ctx, fresh)
	snapErr := h.e.DeleteSnapshot(h.ctx, "mem", "snap-never", nil)
	_, _, agentErr := h.e.LockAgent()
	_, claimErr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}) // its lock file is there: the store says it
	for what, err := range map[string]error{"register of a new volume": regErr, "delete of a snapshot": snapErr, "the agent's lock": agentErr, "claim": claimErr} {
		if !errors.Is(err, store.ErrReadOnlyFS) || !strings.Contains(err.Error(), "volctl can read the state there but not change it") ||
			!strings.Contains(err.Error(), h.dir) || strings.Contains(err.Error(), ".lock") {
			t.Errorf("%s on a read-only state dir: %v; want the state dir named, read-only, what to do, and no lock file", what, err)
		}
	}
}

// reopenedReadOnly closes h's engine, runs prep (nil: nothing) on the state dir, makes the state
// dir read-only (a read-only bind mount of itself, skipping where mounting is not allowed) and
// opens the engine on it again.
func reopenedReadOnly(t *testing.T, h *harness, prep func()) {
	t.Helper()
	h.e.Close()
	if prep != nil {
		prep()
	}
	if err := unix.Mount(h.dir, h.dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount the state dir: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(h.dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", h.dir, err)
		}
	})
	if err := unix.Mount("", h.dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to remount a bind read-only: %v", err)
	}
	h.e = nil
	h.open(Config{})
}
