package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A reader's read-only bind of the shared volume, moved with its parent directory to where
// another reader's read-only volume_mount names: the same volume, in the same mode, at the
// destination's path. Before, the second reader's bind found it "bound already" and handed it
// out as its own (round 63's note: a bind in the same mode is not told apart by its mode), and
// its release unbound the first reader's from under its alloc. Each claim records the mount its
// bind made (bindrecord.go); a mount another claim records is refused as its, the claim
// rolled back, and the first reader's bind stays. Real mounts, as root.
func TestSameModeMovedBindIsNotHandedOut(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dir := hostpathtest.MountDir(t)
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("one", 1, true, filepath.Join(dir, "a", "data"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "b", "data")
	_, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, dest))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "one[0]"'s volume_mount `+filepath.Join(dir, "a", "data")+", moved there") {
		t.Errorf("group two's read-only bind at %s, where group one's read-only bind was moved = %v; want a conflict naming one[0]'s bind, moved there", dest, err)
	}
	if _, err := h.e.StopGroup(h.ctx, "two"); err != nil {
		t.Logf("stop two: %v", err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("one[0]'s bind, moved to %s, was unmounted by group two's claim", dest)
	}
}

// A later command's release of a claim whose destination another claim's bind was moved to
// (its own bind unmounted by hand, its directory replaced by the other's renamed one). Before,
// the release unbound whatever mount of the volume it found at its destination: the other
// alloc's bind, which it could not tell from its own (round 63's note, left item). It leaves
// it now, by its own record (the mount it made is not the one there) or, for a claim recorded
// before the record was kept, by the other claim's. Real mounts, as root.
func TestLaterReleaseLeavesAnotherClaimsBindMovedToItsDestination(t *testing.T) {
	t.Parallel()
	for _, recorded := range []bool{true, false} {
		name := "recorded"
		if !recorded {
			name = "recorded before the record was kept"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, dest := bindMovedOntoAnothersDestination(t)
			if !recorded {
				forgetBindMounts(t, h, "two[0]")
			}
			if _, err := h.e.StopGroup(h.ctx, "two"); err != nil {
				t.Fatalf("stop two: %v", err)
			}
			if !hostpathtest.Mounted(t, dest) {
				t.Errorf("group one's bind, moved to %s (group two's destination), was unmounted by group two's release", dest)
			}
		})
	}
}

// The same layout, the claim whose destination it is driven again (reconcile, its group run
// again): its bind found "bound already" in its mode was handed the other alloc's bind as its
// own. The other claim's record names it: refused, a conflict naming that claim's bind.
func TestClaimDrivenAgainIsNotHandedAnotherClaimsBindMovedToItsDestination(t *testing.T) {
	t.Parallel()
	h, dest := bindMovedOntoAnothersDestination(t)
	_, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, dest))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "one[0]"'s volume_mount`) || !strings.Contains(err.Error(), "not this claim's bind") {
		t.Errorf("group two run again, its destination %s holding group one's moved bind = %v; want a conflict saying it is one[0]'s, not its bind", dest, err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("group one's bind, moved to %s, was unmounted", dest)
	}
}

// The claim whose bind was moved, released while the other claim (whose destination it was
// moved to) is live: its release walked its destination, found nothing, and took the bind at
// the other claim's destination for the other claim's, so the release ended with its own bind
// left mounted in the other's place, the volume readable and writable there with no claim of
// it. Its record names the bind wherever it went: the release is refused, naming it.
func TestReleaseOfABindMovedToAnotherClaimsDestinationIsRefused(t *testing.T) {
	t.Parallel()
	h, dest := bindMovedOntoAnothersDestination(t)
	_, err := h.e.StopGroup(h.ctx, "one")
	if err == nil || !strings.Contains(err.Error(), "still bound at "+dest) {
		t.Errorf("stop one, its bind moved to %s = %v; want the release refused, naming it", dest, err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("group one's bind, moved to %s, was unmounted", dest)
	}
}

// bindMovedOntoAnothersDestination is a hostpath engine with shared volume "data" held for
// reading by groups one (bound at DIR/a/data) and two (bound at DIR/b/data), after two's bind
// was unmounted by hand, DIR/b removed, and DIR/a renamed to DIR/b: one's bind is at two's
// destination, which it returns.
func bindMovedOntoAnothersDestination(t *testing.T) (*hostpathEngine, string) {
	t.Helper()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dir := hostpathtest.MountDir(t)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("one", 1, true, filepath.Join(a, "data"))); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(b, "data")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, dest)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	return h, dest
}

// forgetBindMounts clears what alloc's claim of volume "data" records of its binds' mounts, as
// a volctl before schema version 29 left it.
func forgetBindMounts(t *testing.T, h *hostpathEngine, alloc string) {
	t.Helper()
	err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		c, err := tx.Claims().Find("data", alloc)
		if err != nil {
			return err
		}
		return tx.Claims().SetBindMounts(c.ID, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
}
