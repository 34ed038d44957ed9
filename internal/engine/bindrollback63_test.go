package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A reader's read-only volume_mount names the directory a writer's read-write bind of the same
// volume was moved to: its bind is refused (bindModeDiffers), and the claim is rolled back.
// Before, the rollback's release unbound whatever mount of the volume it found at the
// reader's destination, the writer's bind among them, which the bind had just refused as not
// this claim's: the writer's alloc lost its volume_mount to another alloc's failed claim. The
// rollback now leaves the mount the bind refused (round 62's note, left item).
func TestRefusedBindsRollbackLeavesTheMovedBind(t *testing.T) {
	t.Parallel()
	h, dest := writersBindMoved(t)
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("reader", 1, true, dest)); err == nil {
		t.Fatalf("reader's read-only group run at %s, where web[0]'s read-write bind was moved, succeeded", dest)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("web[0]'s read-write bind, moved to %s, was unmounted by the rollback of the reader's claim refused there", dest)
	}
	if _, err := h.e.StopGroup(h.ctx, "reader"); err != nil {
		t.Logf("stop reader: %v", err)
	}
}

// The same, for a claim of its own (`volume claim --volume-mount`): the refusal is a conflict,
// as checkJoined's of another claim's destination is, so the claim is rolled back rather than
// left published for reconcile to bind, and refused, again each pass; before, it was left, and
// its release (the user's, or a later command's) unmounted the writer's bind, which that
// command has no way to tell from one the claim made.
func TestRefusedBindOfAClaimIsRolledBackLeavingTheMovedBind(t *testing.T) {
	t.Parallel()
	h, dest := writersBindMoved(t)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "reader", ReadOnly: true,
		AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.FileSystem,
		Binds: []spec.VolumeMount{{Destination: dest, ReadOnly: true}}})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("reader's read-only claim bound at %s, where web[0]'s read-write bind was moved = %v; want a conflict, rolled back", dest, err)
	}
	if h.e.holds(h.ctx, "data", "reader") {
		if _, rerr := h.e.Release(h.ctx, "data", "reader"); rerr != nil {
			t.Logf("release reader: %v", rerr)
		}
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Errorf("web[0]'s read-write bind, moved to %s, was unmounted by the reader's claim refused there", dest)
	}
}

// writersBindMoved is a hostpath engine with shared volume "data", which alloc web[0] of group
// web holds for writing, bound at DIR/w/data, and the destination that bind was moved to with
// its parent directory, DIR/r/data (DIR/w renamed by whoever owns it).
func writersBindMoved(t *testing.T) (*hostpathEngine, string) {
	t.Helper()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dir := hostpathtest.MountDir(t)
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, filepath.Join(dir, "w", "data"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "w"), filepath.Join(dir, "r")); err != nil {
		t.Fatal(err)
	}
	return h, filepath.Join(dir, "r", "data")
}
