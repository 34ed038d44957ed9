package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// Between the walk of a
// read-only volume_mount's destination and its mount, the owner of the directories above it
// renames the destination's parent away and renames, into its place, the parent of another
// alloc's read-write bind of the same volume. The docs (Paths volctl mounts on or makes,
// reopenMount) promise that when the walk anew "finds anything but the new mount, the mount is
// undone and the bind refused". reopenMount only asks for "a mount of the same file" as the
// claim's target, which the other alloc's bind is: the bind is taken for made, the read-only
// remount and the propagation landed on the other alloc's bind (its writer lost writing), and
// the new bind stayed where the parent was moved to. Now the walk anew must lead through the
// parent the walk opened (reopenMount). Found by helper review62.
func TestBindRefusesADestinationSwappedForAnotherBindOfTheVolume(t *testing.T) {
	hostpathtest.RequireMount(t)
	bothResolvers(t, func(t *testing.T) {
		dir := hostpathtest.MountDir(t)
		src := bindSource(t, dir)
		// Another alloc's read-write bind of the volume, at dir/b/data.
		otherParent := filepath.Join(dir, "b")
		if err := os.MkdirAll(filepath.Join(otherParent, "data"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(filepath.Join(dir, "source"), filepath.Join(otherParent, "data"), "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		parent := filepath.Join(dir, "a")
		dest, moved := filepath.Join(parent, "data"), filepath.Join(dir, "moved")
		dst, err := openNoFollow("/", dest, createDirs)
		if err != nil {
			t.Fatal(err)
		}
		defer dst.close()
		// The swap: a moved away, b (holding the other bind) renamed to a.
		if err := os.Rename(parent, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(otherParent, parent); err != nil {
			t.Fatal(err)
		}
		_, err = bindFD(src, dst, spec.VolumeMount{Destination: dest, ReadOnly: true, PropagationMode: spec.PropagationPrivate})
		var st unix.Statfs_t
		if serr := unix.Statfs(dest, &st); serr != nil {
			t.Fatal(serr)
		}
		if st.Flags&unix.ST_RDONLY != 0 {
			t.Errorf("the other alloc's read-write bind (now at %s) was remounted read-only by this claim's bind", dest)
		}
		if err == nil {
			t.Errorf("bindFD succeeded though %s leads to another alloc's bind of the volume, not the new mount; mounts: %v", dest, mountsUnder(t, dir))
		}
		if hostpathtest.Mounted(t, filepath.Join(moved, "data")) {
			t.Errorf("the new bind was left at %s, where the destination's parent was moved to", filepath.Join(moved, "data"))
		}
	})
}

// A writer's
// volume_mount of a shared volume is bound at DIR/w/data; the owner of DIR renames DIR/w to
// DIR/r (the bind goes with it: its parent is not a mount point). A reader's group then
// names DIR/r/data. refuseSharedDestinations compares the text of the destinations, and the
// writer's (DIR/w/data) no longer exists for checkJoined to place, so bind finds "the volume
// mounted already" (the same file as the reader's target) and takes the writer's read-write
// bind for the reader's own: the read-only volume_mount is writable (the very case
// docs/architecture.md says admission and checkJoined refuse), and the reader's release then
// unmounted the writer's bind from under it. Now a mount of the volume there not as this bind
// makes it (writable for a read-only one) is refused at the bind, after checkJoined's refusal
// of another claim's destination reached by another path, which names that claim
// (bindModeDiffers). The refused claim's rollback still unmounts the moved bind, which no
// record tells from one of its own (round 62's note, left). Found by helper review62.
func TestReadOnlyVolumeMountIsNotHandedAWritersBindMovedToItsDestination(t *testing.T) {
	t.Parallel()
	h, dest := writersBindMoved(t)
	info, err := h.e.RunGroup(h.ctx, sharedDestGroup("reader", 1, true, dest))
	if err == nil || !strings.Contains(err.Error(), "the volume is mounted there already, but writable, where this bind is read-only") {
		t.Errorf("reader's read-only group run at %s, where web[0]'s read-write bind was moved = %v, %+v; want it refused, saying the mount there is writable", dest, err, info.Allocs)
	}
	for _, a := range info.Allocs {
		if len(a.Claims) > 0 {
			t.Errorf("reader alloc %s holds %+v after its bind was refused", a.Name, a.Claims)
		}
	}
	if _, err := h.e.StopGroup(h.ctx, "reader"); err != nil {
		t.Logf("stop reader: %v", err)
	}
	// web[0]'s bind, moved: its release leaves it, naming it (movedBinds); unmounted, the
	// release finishes.
	_ = unix.Unmount(dest, unix.MNT_DETACH)
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Errorf("stop web once its moved bind is unmounted: %v", err)
	}
}
