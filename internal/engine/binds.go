package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// bind makes a published claim's group volume_mounts: its target bind-mounted at each
// destination with the propagation asked for, read-only when asked. It is idempotent, and
// returns the destinations it mounted (none when each was mounted already).
// Neither path is followed through a symlink (nofollow.go): the target is opened below the
// state dir, the destination from "/", each one component at a time, and the mount is made on
// their file descriptors.
func (e *Engine) bind(ctx context.Context, cl *store.Claim) (bound []string, err error) {
	for _, b := range cl.Binds {
		made, err := e.bindMount(ctx, cl, b)
		if err != nil {
			return bound, err
		}
		if made {
			bound = append(bound, b.Destination)
		}
	}
	return bound, nil
}

// bindMount binds cl's target at b's destination unless something is mounted there; made says
// it did.
func (e *Engine) bindMount(ctx context.Context, cl *store.Claim, b spec.VolumeMount) (made bool, err error) {
	target := cl.TargetPath
	src, err := openNoFollow(e.cfg.StateDir, e.realPath(target), createNothing)
	if err != nil {
		return false, fmt.Errorf("volume_mount %s: the claim's target: %w", b.Destination, err)
	}
	defer src.close()
	dir, err := src.isDir()
	if err != nil {
		return false, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	}
	mode := createFile
	if dir {
		mode = createDirs
	}
	dst, err := openNoFollow("/", b.Destination, mode)
	if err != nil {
		return false, volumeMountErr(b.Destination, err)
	}
	defer dst.close()
	mounted, err := dst.mounted()
	if err != nil {
		return false, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	}
	if mounted {
		// Bound already, or something else is mounted there: an admin's disk, another
		// volume's staging path. That is not the volume, and volctl mounts neither over it
		// (hiding it from its users) nor hands it out as the volume.
		ours, err := dst.sameFile(src)
		if err != nil {
			return false, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
		if !ours {
			return false, fmt.Errorf("volume_mount %s: something else is mounted there, not this claim's volume: "+
				"volctl neither mounts over it nor hands it out as the volume; unmount it, or give the volume_mount another destination", b.Destination)
		}
		// The volume, but maybe another claim's bind, seen here through another path to the
		// same place (an admin's bind mount, mount propagation): not this claim's to take.
		if c, at, err := e.boundAtSamePlace(ctx, cl, b.Destination, dst, func(store.Claim) bool { return true }); err != nil {
			return false, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		} else if c != nil {
			way := boundWayOut(*c)
			return false, conflictf("volume_mount %s is where alloc %q's volume %q is bound at %s (its %s claim, %s), by another path: a bind mount or mount propagation "+
				"joins the two, and a mount at either is at both. One place is one mount, which that claim's release would unbind from under this one, and whose "+
				"read-only or read-write flag is that claim's; give this volume_mount a destination of its own, or release that claim first%s",
				b.Destination, c.Alloc, c.VolumeID, at, c.Mode, bindWhat(*c), way)
		}
		return false, nil
	}
	// Something mounted below the destination (another volume_mount, an admin's disk) would be
	// hidden under the bind, and its alloc would see this volume's directory there instead:
	// refused as a mount at the destination itself is. A group binds an alloc's volume_mounts
	// outermost first (nestingOrder), so its own nested ones never meet this.
	if below := mountsBelow(b.Destination); len(below) > 0 {
		return false, fmt.Errorf("volume_mount %s: %s mounted below it, which this bind would hide: volctl does not mount over it; "+
			"bind the outer destination first, or give the volume_mount another destination", b.Destination, listPaths(below))
	}
	// The target must still be the volume's mount: a reconcile pass judges a target mounted by
	// the table it read at its start, and a reboot (or an unmount by hand) since leaves an
	// empty directory of the state dir there, which bound would hand the alloc the state
	// dir's disk as its volume, and hold the destination against the restore that follows
	// (TestReconcileDoesNotBindATargetUnmountedSinceItReadTheTable). Read from the table, as
	// reconcile's checks are: a statfs of a dead NFS mount would block.
	if mp, err := e.mountedByTable(target); err != nil {
		return false, fmt.Errorf("volume_mount %s: checking that the claim's target %s is mounted: %w", b.Destination, target, err)
	} else if !mp.Mounted {
		return false, &targetUnmounted{target: target, dest: b.Destination}
	}
	return true, bindFD(src, dst, b)
}

// targetUnmounted is a published claim's target found unmounted when its volume_mount was to be
// bound: nothing is bound, and the claim is left for reconcile to restore.
type targetUnmounted struct{ target, dest string }

func (t *targetUnmounted) Error() string {
	return fmt.Sprintf("volume_mount %s: the claim's target %s is no longer mounted (a reboot or an unmount since it was checked): "+
		"volctl does not bind the empty directory there as the volume; `volctl reconcile` mounts the target again, then binds it", t.dest, t.target)
}

// mountsBelow lists the mount points strictly below dest, sorted; none when dest is an empty
// directory that is not a mount root (mountFree: no read of the mount table), or when the
// table cannot be read (the bind then goes on as it did before this check).
func mountsBelow(dest string) []string {
	dest = filepath.Clean(dest)
	if mountFree(dest) {
		return nil
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dest))
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		if under(m.Mountpoint, dest) && !slices.Contains(out, m.Mountpoint) {
			out = append(out, m.Mountpoint)
		}
	}
	slices.Sort(out)
	return out
}

// under reports whether path lies strictly below dir (both clean and absolute).
func under(path, dir string) bool {
	if dir == "/" {
		return path != "/"
	}
	return strings.HasPrefix(path, dir+"/")
}

// listPaths says which paths: "/a is", "/a and /b are", "/a, /b, /c and 2 more are".
func listPaths(paths []string) string {
	const shown = 3
	if len(paths) == 1 {
		return paths[0] + " is"
	}
	if len(paths) <= shown {
		return strings.Join(paths[:len(paths)-1], ", ") + " and " + paths[len(paths)-1] + " are"
	}
	return fmt.Sprintf("%s and %d more are", strings.Join(paths[:shown], ", "), len(paths)-shown)
}

// nestingOrder orders items by where their volume_mount destinations lie, keeping their order
// otherwise: with outerFirst, one whose destination is below another's comes after it (binding:
// the outer mount is made first, and the inner on the outer volume's directory); without, before
// it (unbinding: an outer mount with one below it cannot be unmounted, EBUSY). Items whose
// destinations nest both ways (a cycle) keep their order, and bind refuses the one that would
// hide another.
func nestingOrder[T any](items []T, dests func(T) []string, outerFirst bool) []T {
	rest := slices.Clone(items)
	out := make([]T, 0, len(items))
	// waits reports whether i must come after j.
	waits := func(i, j T) bool {
		for _, a := range dests(i) {
			for _, b := range dests(j) {
				a, b := filepath.Clean(a), filepath.Clean(b)
				if outerFirst && under(a, b) || !outerFirst && under(b, a) {
					return true
				}
			}
		}
		return false
	}
	for len(rest) > 0 {
		pick := 0
		for i := range rest {
			free := true
			for j := range rest {
				if i != j && waits(rest[i], rest[j]) {
					free = false
					break
				}
			}
			if free {
				pick = i
				break
			}
		}
		out = append(out, rest[pick])
		rest = slices.Delete(rest, pick, pick+1)
	}
	return out
}

// volumeMountErr says which volume_mount a destination's error is about. A symlink in the
// destination is said once: "volume_mount /srv/x: /srv is a symlink, ...".
func volumeMountErr(dest string, err error) error {
	var se *symlinkError
	if errors.As(err, &se) && se.Path == filepath.Clean(dest) && se.Context == "" {
		se.Context = "volume_mount " + dest
		return err
	}
	return fmt.Errorf("volume_mount %s: %w", dest, err)
}

// bindFD bind-mounts src on dst, both opened paths, then sets the propagation and read-only
// flag on the new mount, reached again through dst's parent. Anything that fails after the
// mount undoes it.
func bindFD(src, dst *pathFD, b spec.VolumeMount) error {
	if err := mountOn(src, dst); err != nil {
		return fmt.Errorf("volume_mount %s: bind mount: %w", b.Destination, err)
	}
	fail := func(step string, err error) error {
		_ = undoMountOn(dst)
		return fmt.Errorf("volume_mount %s: %s: %w", b.Destination, step, err)
	}
	m, err := dst.reopenMount(src)
	if err != nil {
		return fail("open the new mount", err)
	}
	defer unix.Close(m)
	if err := unix.Mount("", procPath(m), "", propagationFlag(b.PropagationMode)|unix.MS_REC, ""); err != nil {
		return fail("set propagation", err)
	}
	if b.ReadOnly {
		if err := unix.Mount("", procPath(m), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fail("remount read-only", err)
		}
	}
	return nil
}

// propagationFlag maps Nomad's propagation modes to mount propagation: private sees nothing of
// later mounts, host-to-task receives the host's (slave), bidirectional shares both ways.
func propagationFlag(mode string) uintptr {
	switch mode {
	case spec.PropagationHostToTask:
		return unix.MS_SLAVE
	case spec.PropagationBidirectional:
		return unix.MS_SHARED
	}
	return unix.MS_PRIVATE
}

// unbind removes a claim's volume_mounts; a destination that is not mounted is already done,
// and so is one where something else than the claim's mounted target is mounted (bind refused
// it, or it replaced the bind since): that mount is someone else's, left in place. So is the
// bind at a destination another claim of the volume, held and not being released, is bound at
// too, one path being one mount: claims an older volctl admitted there (admission refuses it
// now, refuseSharedDestinations) share it, and the last one's release unbinds it (a forced
// detach, marking them all releasing, unbinds it at once). So is a destination at the place
// another such claim's is, by another path (boundAtSamePlace): its unmount would be propagated
// there.
// The destination is resolved as bind resolves it, without following a symlink, and unmounted
// through the file descriptor of its parent.
func (e *Engine) unbind(ctx context.Context, cl *store.Claim) error {
	var others map[string]string // the volume's other claims' destinations, read once when needed
	for _, b := range cl.Binds {
		dst, err := openNoFollow("/", b.Destination, createNothing)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return volumeMountErr(b.Destination, err)
		}
		mounted, err := dst.mounted()
		if err == nil && mounted && e.boundElsewhere(cl.TargetPath, dst) {
			mounted = false
		}
		if err == nil && mounted && others == nil {
			others, _, err = e.boundDestinations(ctx, cl.VolumeID, func(c store.Claim) bool { return c.ID != cl.ID && !c.Releasing })
		}
		if alloc := others[filepath.Clean(b.Destination)]; err == nil && mounted && alloc != "" {
			e.log.Info(fmt.Sprintf("volume_mount %s of volume %q left bound: alloc %q's claim of the volume is bound there too, and its release unbinds it", b.Destination, cl.VolumeID, alloc),
				"volume", cl.VolumeID, "alloc", cl.Alloc)
			mounted = false
		}
		if err == nil && mounted && len(others) > 0 {
			// Bound at the same place by another path (bind refuses that now): unmounting
			// here would unmount there too, propagated.
			var c *store.Claim
			var at string
			if c, at, err = e.boundAtSamePlace(ctx, cl, b.Destination, dst, func(c store.Claim) bool { return !c.Releasing }); err == nil && c != nil {
				e.log.Info(fmt.Sprintf("volume_mount %s of volume %q left bound: alloc %q's claim of the volume is bound at %s, the same place by another path, and its release unbinds it",
					b.Destination, cl.VolumeID, c.Alloc, at), "volume", cl.VolumeID, "alloc", cl.Alloc)
				mounted = false
			}
		}
		if err == nil && mounted {
			if err = dst.unmount(0); errors.Is(err, unix.EBUSY) {
				if below := mountsBelow(b.Destination); len(below) > 0 {
					err = fmt.Errorf("unmount: %w: %s mounted below it; unmount or release that first", err, listPaths(below))
				} else {
					err = fmt.Errorf("unmount: %w (is something still using it?)", err)
				}
			} else if err != nil {
				err = fmt.Errorf("unmount: %w (is something still using it?)", err)
			}
		}
		dst.close()
		if err != nil {
			return fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
	}
	return e.movedBinds(ctx, cl)
}

// movedBinds refuses a claim's release while its volume is still bound outside the state dir
// at a path none of the volume's claims' volume_mount destinations names: a bind of the claim,
// moved there with a directory above its destination (renamed by whoever owns it) after it was
// bound. unbind walks each destination by its path and finds nothing there then; the bind,
// left behind, would keep the volume readable and writable in that tree after its release,
// and mounted while the plugin unstages and detaches it. A bind of the claim's target is a
// mount of the same file system and root as the target (mountinfo's device and root), at a
// path ending in its destination's last name, which is how it is found wherever it went; it
// is not unmounted (volctl unmounts only at the paths
// it bound), but named, with what to do. A claim without volume_mounts, or whose target is
// not mounted, reads nothing.
func (e *Engine) movedBinds(ctx context.Context, cl *store.Claim) error {
	if len(cl.Binds) == 0 {
		return nil
	}
	src, err := openNoFollow(e.cfg.StateDir, e.realPath(cl.TargetPath), createNothing)
	if err != nil {
		return nil // no target to know the volume's mounts by
	}
	defer src.close()
	if mounted, err := src.mounted(); err != nil || !mounted {
		return nil
	}
	id, err := mountID(src.fd)
	if err != nil {
		return nil
	}
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil // as mountsBelow: the release goes on as before this check
	}
	i := slices.IndexFunc(mounts, func(m *mountinfo.Info) bool { return uint64(m.ID) == id })
	if i < 0 {
		return nil
	}
	target := mounts[i]
	bound, handed, err := e.boundDestinations(ctx, cl.VolumeID, nil)
	if err != nil || handed {
		return err // handed over to Nomad, whose allocs may mount the volume anywhere
	}
	// A mount point cannot be renamed (EBUSY): a bind moved with a directory above it keeps its
	// destination's last name, which tells it from the plugin's own mounts of the volume
	// outside the state dir (a plugin may mount a volume at a path of its own, then bind that).
	names := map[string]bool{}
	for _, b := range cl.Binds {
		names[filepath.Base(filepath.Clean(b.Destination))] = true
	}
	var moved []string
	for _, m := range mounts {
		if m.Major == target.Major && m.Minor == target.Minor && m.Root == target.Root && names[filepath.Base(m.Mountpoint)] &&
			m.Mountpoint != e.cfg.StateDir && !under(m.Mountpoint, e.cfg.StateDir) && bound[m.Mountpoint] == "" {
			moved = append(moved, m.Mountpoint)
		}
	}
	if len(moved) == 0 {
		return nil
	}
	slices.Sort(moved)
	dests := make([]string, len(cl.Binds))
	for i, b := range cl.Binds {
		dests[i] = b.Destination
	}
	return fmt.Errorf("volume %q is still bound at %s, which none of its claims' volume_mount destinations names: most likely alloc %q's volume_mount (%s), "+
		"moved there with a directory above it since it was bound. volctl unmounts only where it bound, so it leaves it: unmount it (`%s`) once nothing uses it, "+
		"then release the claim again (or run `volctl reconcile`)",
		cl.VolumeID, strings.Join(moved, " and "), cl.Alloc, strings.Join(dests, ", "), shellquote.Command("umount", moved...))
}

// boundDestinations are the volume_mount destinations of a volume's live claims that count
// (nil: all), cleaned, each with the alloc of a claim bound there; handed says the volume is
// marked handed over to Nomad.
func (e *Engine) boundDestinations(ctx context.Context, volumeID string, counts func(store.Claim) bool) (bound map[string]string, handed bool, err error) {
	bound = map[string]string{}
	err = e.store.View(ctx, func(tx *store.Tx) error {
		claims, err := tx.Claims().ByVolume(volumeID)
		if err != nil {
			return err
		}
		for _, c := range claims {
			if counts != nil && !counts(c) {
				continue
			}
			for _, b := range c.Binds {
				bound[filepath.Clean(b.Destination)] = c.Alloc
			}
		}
		var u usage
		if err := u.readHandover(tx, volumeID); err != nil {
			return err
		}
		handed = u.handover != nil
		return nil
	})
	return bound, handed, err
}

// boundElsewhere reports whether the mount at a claim's volume_mount destination is provably
// not the claim's bind: the claim's target is mounted and is another file than the
// destination's root. A target that cannot be opened or is not mounted (its mount lost) proves
// nothing, and the destination is taken for the claim's bind, as before this check.
func (e *Engine) boundElsewhere(target string, dst *pathFD) bool {
	src, err := openNoFollow(e.cfg.StateDir, e.realPath(target), createNothing)
	if err != nil {
		return false
	}
	defer src.close()
	if mounted, err := src.mounted(); err != nil || !mounted {
		return false
	}
	same, err := dst.sameFile(src)
	return err == nil && !same
}

// forceUnmount detaches whatever is mounted at path, one of volctl's own target and staging
// paths below the state dir (root), when a forced detach runs without the plugin. Lazy
// (MNT_DETACH), because a plugin that is gone may have left the mount busy, and a forced
// detach must not stop for that. The path is opened as bind opens it, without following a
// symlink planted in the state dir, and unmounted through its parent's descriptor: a link in
// place of publish/<alloc> must not make root unmount what is mounted where it points.
func forceUnmount(root, path string) error {
	for {
		p, err := openNoFollow(root, path, createNothing)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		mounted, err := p.mounted()
		if err == nil && mounted {
			if err = p.unmount(unix.MNT_DETACH); err != nil {
				err = fmt.Errorf("unmount %s: %w", path, err)
			}
		}
		p.close()
		if err != nil || !mounted {
			return err
		}
	}
}

// boundAtSamePlace finds another live claim of cl's volume (one that counts) with a
// volume_mount destination at the place dest (open as dst) names, by another path: at returns
// that destination. A place is the directory (or file) a destination is mounted on, beneath
// any bind of the volume there, as the mount table says it: a file system (device) and a path
// in it. Two paths an admin's bind mount joins, with shared propagation (as "/" is on systemd
// hosts), are one place: a bind at either is propagated to the other, the same file, which
// bind would otherwise take as its own bound already. Destinations equal as text are left to
// admission (refuseSharedDestinations) and to claims an older volctl admitted there. A volume
// with no other claim with volume_mounts reads nothing more; a mount table that cannot be read
// or a destination not found in it proves nothing (nil).
func (e *Engine) boundAtSamePlace(ctx context.Context, cl *store.Claim, dest string, dst *pathFD, counts func(store.Claim) bool) (*store.Claim, string, error) {
	dest = filepath.Clean(dest)
	var others []store.Claim
	err := e.store.View(ctx, func(tx *store.Tx) error {
		claims, err := tx.Claims().ByVolume(cl.VolumeID)
		others = slices.DeleteFunc(claims, func(c store.Claim) bool {
			return c.ID == cl.ID || !counts(c) || !slices.ContainsFunc(c.Binds, func(b spec.VolumeMount) bool { return filepath.Clean(b.Destination) != dest })
		})
		return err
	})
	if err != nil || len(others) == 0 {
		return nil, "", err
	}
	src, err := openNoFollow(e.cfg.StateDir, e.realPath(cl.TargetPath), createNothing)
	if err != nil {
		return nil, "", nil // no target to know the volume's binds by
	}
	defer src.close()
	table, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, "", nil
	}
	mounts := make(map[int]*mountinfo.Info, len(table))
	for _, m := range table {
		mounts[m.ID] = m
	}
	vol := mountOf(mounts, src)
	if vol == nil {
		return nil, "", nil
	}
	mine, ok := placeOf(mounts, vol, dest, dst)
	if !ok {
		return nil, "", nil
	}
	for i, c := range others {
		for _, b := range c.Binds {
			d := filepath.Clean(b.Destination)
			if d == dest {
				continue
			}
			o, err := openNoFollow("/", d, createNothing)
			if err != nil {
				continue
			}
			theirs, ok := placeOf(mounts, vol, d, o)
			o.close()
			if ok && theirs == mine {
				return &others[i], b.Destination, nil
			}
		}
	}
	return nil, "", nil
}

// place is where a path lies beneath the binds of a volume at it: a file system (device) and a
// path in it (placeOf).
type place struct {
	major, minor int
	path         string
}

// mountOf is the mount table's entry for the mount the opened path is on; nil when not found.
func mountOf(mounts map[int]*mountinfo.Info, p *pathFD) *mountinfo.Info {
	id, err := mountID(p.fd)
	if err != nil {
		return nil
	}
	return mounts[int(id)]
}

// placeOf is the place of path (open as p): where in which file system it is, beneath the binds
// of the volume (vol, its target's mount: a bind of the volume is a mount of its device and
// root) mounted at it. A path that is no mount point, or the root of another mount (an admin's
// bind of a directory elsewhere), is that directory; a bind of the volume sits on a directory of
// the mount below it, whose path in its file system is that mount's root joined with the rest
// of the path below its mount point.
func placeOf(mounts map[int]*mountinfo.Info, vol *mountinfo.Info, path string, p *pathFD) (place, bool) {
	m := mountOf(mounts, p)
	if m == nil {
		return place{}, false
	}
	in := func(m *mountinfo.Info) place {
		rel, err := filepath.Rel(m.Mountpoint, path)
		if err != nil {
			rel = "."
		}
		return place{m.Major, m.Minor, filepath.Join(m.Root, rel)}
	}
	if m.Mountpoint != path {
		return in(m), true
	}
	for m.Major == vol.Major && m.Minor == vol.Minor && m.Root == vol.Root {
		parent := mounts[m.Parent]
		if parent == nil {
			return place{}, false
		}
		if parent.Mountpoint != path {
			return in(parent), true
		}
		m = parent // another bind of the volume, or another mount, under this one at path
	}
	return in(m), true
}
