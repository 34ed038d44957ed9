package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/store"
)

// stripUniqueIDs rewrites the bind records of the given claims of volume "data" as a kernel
// before Linux 6.8 leaves them: the table's mount ID alone (as
// TestPreUniqueIDMovedBindIsNotLeftSilentlyByAForcedDetach writes them).
func stripUniqueIDs(t *testing.T, h *hostpathEngine, allocs ...string) {
	t.Helper()
	err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		for _, alloc := range allocs {
			c, err := tx.Claims().Find("data", alloc)
			if err != nil {
				return err
			}
			if !ofHere(c.BindMounts) {
				return fmt.Errorf("claim %s records no bind of this boot: %+v", alloc, c.BindMounts)
			}
			at := map[string]store.BindMount{}
			for d, m := range c.BindMounts.At {
				at[d] = store.BindMount{ID: m.ID}
			}
			if err := tx.Claims().SetBindMounts(c.ID, &store.BindMounts{Boot: c.BindMounts.Boot, MountNS: c.BindMounts.MountNS, At: at}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Before Linux 6.8 (records with the table's ID alone): group two's release, in a later command,
// its destination holding group one's bind moved there (its own unmounted by hand). The docs
// promise the release leaves it (TestLaterReleaseLeavesAnotherClaimsBindMovedToItsDestination);
// this round's change to bindOfAnother matched by unique IDs only (movedAway needs one too), so
// nothing said the mount was not two's and it was unmounted from under one[0]'s alloc, still
// running. Found by helper review64 (own5), in this round's change.
func TestPreUniqueIDLaterReleaseLeavesAnotherClaimsMovedBind(t *testing.T) {
	t.Parallel()
	h, dest := bindMovedOntoAnothersDestination(t)
	stripUniqueIDs(t, h, "one[0]", "two[0]")
	if _, err := h.e.StopGroup(h.ctx, "two"); err != nil {
		t.Logf("stop two: %v", err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("before Linux 6.8: group one's bind, moved to %s (group two's destination), was unmounted by group two's release; one[0]'s record names it by the table's ID", dest)
	}
}

// Before Linux 6.8: group two driven again, its destination holding group one's moved bind in
// the same mode. The docs promise a refusal naming one[0]'s bind
// (TestClaimDrivenAgainIsNotHandedAnotherClaimsBindMovedToItsDestination); it was handed out
// as two's, recorded as two's, and two's stop then unmounted it from under one[0]'s alloc.
// Found by helper review64 (own5), in this round's change.
func TestPreUniqueIDClaimDrivenAgainIsNotHandedAnotherClaimsBind(t *testing.T) {
	t.Parallel()
	h, dest := bindMovedOntoAnothersDestination(t)
	stripUniqueIDs(t, h, "one[0]", "two[0]")
	_, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, dest))
	t.Logf("run two again: %v", err)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "one[0]"'s volume_mount`) {
		t.Errorf("before Linux 6.8: group two run again, its destination %s holding group one's moved bind = %v; want a conflict naming one[0]'s bind", dest, err)
	}
	if _, err := h.e.StopGroup(h.ctx, "two"); err != nil {
		t.Logf("stop two: %v", err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("before Linux 6.8: group one's bind, moved to %s, was handed to group two and unmounted by its stop", dest)
	}
}

// Before Linux 6.8: a new reader's destination where another reader's bind (same mode) was
// moved. The docs promise it is refused there as that claim's (TestSameModeMovedBindIsNotHandedOut);
// it was handed out, and the new reader's stop unmounted it from under the first. Found by
// helper review64 (own5), in this round's change.
func TestPreUniqueIDSameModeMovedBindIsNotHandedOut(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, "multi-node-single-writer")
	dir := hostpathtest.MountDir(t)
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("one", 1, true, filepath.Join(dir, "a", "data"))); err != nil {
		t.Fatal(err)
	}
	stripUniqueIDs(t, h, "one[0]")
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "b", "data")
	_, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, dest))
	t.Logf("run two: %v", err)
	if !errors.Is(err, ErrConflict) {
		t.Errorf("before Linux 6.8: group two's read-only bind at %s, where group one's read-only bind was moved = %v; want a conflict naming one[0]'s bind", dest, err)
	}
	if _, err := h.e.StopGroup(h.ctx, "two"); err != nil {
		t.Logf("stop two: %v", err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("before Linux 6.8: one[0]'s bind, moved to %s, was unmounted by group two's claim", dest)
	}
}
