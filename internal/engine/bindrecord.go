package engine

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// A claim records the mount each of its volume_mount binds made (store.BindMounts), in the
// boot and the mount namespace it made it in: a bind of another claim's, moved to this claim's destination with a
// directory above it (renamed by whoever owns it), is a mount of the same volume, maybe in the
// same mode, at the destination's path, and nothing else tells it from the claim's own. bind
// refuses it as not this claim's where it would have handed it out (notThisBind), and unbind
// leaves it where it would have unmounted it from under the alloc it was made for.

// bindMountOf is the mount the open file fd is the root of, as a claim's record holds it.
func bindMountOf(fd int) (store.BindMount, error) {
	id, err := mountID(fd)
	if err != nil {
		return store.BindMount{}, err
	}
	return store.BindMount{ID: id, Unique: uniqueMountID(fd, "")}, nil
}

// uniqueMountID is the unique ID of the mount at path under dirfd (the open file dirfd itself
// when path is ""), not following a last symlink: 0 when the kernel does not say (before Linux
// 6.8). One statx, where bindMountOf makes two.
func uniqueMountID(dirfd int, path string) uint64 {
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_DONT_SYNC
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var sx unix.Statx_t
	if unix.Statx(dirfd, path, flags, unix.STATX_MNT_ID_UNIQUE, &sx) != nil || sx.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		return 0
	}
	return sx.Mnt_id
}

// sameBindMount reports whether a and b are one mount: by their unique IDs where both have
// one, else by the table's.
func sameBindMount(a, b store.BindMount) bool {
	if a.Unique != 0 && b.Unique != 0 {
		return a.Unique == b.Unique
	}
	return a.ID == b.ID
}

// mountNS is the mount namespace this process runs in, the inode of /proc/self/ns/mnt; 0 when it
// cannot be read.
var mountNS = sync.OnceValue(func() uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &st); err != nil {
		return 0
	}
	return st.Ino
})

// ofHere reports whether record r was made in this boot and this mount namespace: a mount's IDs
// are the kernel's for one boot, and a volctl in another namespace sharing the mounts' peer
// groups (mountns.go) sees each as a copy with IDs of its own. Such a volctl reads no record and
// writes none (noteBind), acting as before the record was kept; before, it took the claim's
// own bind for another's (TestBindSeenFromASharedNamespaceIsTheClaimsOwn).
func ofHere(r *store.BindMounts) bool {
	return r != nil && r.Boot != "" && r.Boot == bootID() && r.MountNS != 0 && r.MountNS == mountNS()
}

// recordedBind is the mount cl records its bind at destination made, here (ofHere); ok is false
// when it records none (a claim recorded by a volctl before schema version 29, a bind not made
// yet, a record of another boot, whose mounts are gone, or of another mount namespace).
func recordedBind(cl *store.Claim, destination string) (m store.BindMount, ok bool) {
	if !ofHere(cl.BindMounts) {
		return store.BindMount{}, false
	}
	m, ok = cl.BindMounts.At[filepath.Clean(destination)]
	return m, ok
}

// noteBind sets, in cl, its bind at destination to m (a zero m: none), and reports whether that
// changed the record. The record is copied, not changed in place: other copies of the claim
// share its map.
func noteBind(cl *store.Claim, destination string, m store.BindMount) bool {
	boot, ns := bootID(), mountNS()
	if boot == "" || ns == 0 {
		return false // no boot or namespace to tie a mount's ID to
	}
	if r := cl.BindMounts; r != nil && r.Boot == boot && !ofHere(r) {
		return false // another namespace's, this boot: left to it
	}
	d := filepath.Clean(destination)
	old, had := recordedBind(cl, d)
	if (m == store.BindMount{}) {
		if !had {
			return false
		}
	} else if had && old == m {
		return false
	}
	r := &store.BindMounts{Boot: boot, MountNS: ns, At: map[string]store.BindMount{}}
	if ofHere(cl.BindMounts) {
		maps.Copy(r.At, cl.BindMounts.At)
	}
	if (m == store.BindMount{}) {
		delete(r.At, d)
	} else {
		r.At[d] = m
	}
	if len(r.At) == 0 {
		r = nil
	}
	cl.BindMounts = r
	return true
}

// movedAway is where the mount m, recorded as a bind made at destination, is mounted now when
// that is elsewhere (moved with a directory above the destination): "" when it is not mounted,
// or cannot be told for sure (a record with no unique ID, before Linux 6.8: the table's ID may be
// another mount's since).
func movedAway(m store.BindMount, destination string) string {
	if m.Unique == 0 {
		return ""
	}
	mounts, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) { return uint64(i.ID) != m.ID, false })
	if err != nil {
		return ""
	}
	for _, i := range mounts {
		if i.Mountpoint == filepath.Clean(destination) {
			continue
		}
		if uniqueMountID(unix.AT_FDCWD, i.Mountpoint) == m.Unique {
			return i.Mountpoint
		}
	}
	return ""
}

// forgetBindAt drops, in cl (not yet in the store), what its record of this boot says of a bind
// at destination, about to be bound again, and reports whether it dropped anything. A record of
// another mount namespace is dropped whole: a volctl there would take the bind made here for
// another's by the entry it keeps (its copy there a new mount), and nothing here can say which
// of its other entries still hold (TestRebindFromASharedNamespaceLeavesNoStaleRecord). That
// claim's binds are then told as before the record, until they are bound again.
func forgetBindAt(cl *store.Claim, destination string) bool {
	r := cl.BindMounts
	if r == nil || r.Boot == "" || r.Boot != bootID() {
		return false // another boot's, read by no one
	}
	if _, ok := r.At[filepath.Clean(destination)]; !ok {
		return false
	}
	if ofHere(r) {
		return noteBind(cl, destination, store.BindMount{})
	}
	cl.BindMounts = nil
	return true
}

// saveBindMounts writes cl's record of its binds' mounts, alone. It is progress (a reboot
// undoes the mounts it names), under the volume lock the caller holds.
func (e *Engine) saveBindMounts(ctx context.Context, cl *store.Claim) error {
	err := e.store.UpdateProgress(context.WithoutCancel(ctx), e.locks.holding(cl.VolumeID, func(tx *store.Tx) error {
		return tx.Claims().SetBindMounts(cl.ID, cl.BindMounts)
	}))
	if err != nil {
		return fmt.Errorf("recording the mounts of alloc %q's volume_mounts of volume %q: %w", cl.Alloc, cl.VolumeID, err)
	}
	return nil
}

// bindOfAnother is the live claim of cl's volume, other than cl, that records m as its bind at
// a destination other than destination: the mount found at destination is that claim's bind,
// moved here. nil when none does; a match by the table's ID alone counts only for a claim not
// being released.
func (e *Engine) bindOfAnother(ctx context.Context, cl *store.Claim, destination string, m store.BindMount) (*store.Claim, string, error) {
	claims, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume(cl.VolumeID) })
	if err != nil {
		return nil, "", err
	}
	d := filepath.Clean(destination)
	for i := range claims {
		c := &claims[i]
		if c.ID == cl.ID || c.BindMounts == nil {
			continue
		}
		for at := range c.BindMounts.At {
			if rec, ok := recordedBind(c, at); ok && at != d && sameBindMount(rec, m) {
				// By the table's ID alone (before Linux 6.8), not of a claim being released too:
				// each of two claims released at once (a forced detach) took the mount for the
				// other's, and both left it (TestPreUniqueIDMovedBindIsNotLeftSilentlyByAForcedDetach).
				// Of a live one it still tells its moved bind
				// (TestPreUniqueIDLaterReleaseLeavesAnotherClaimsMovedBind).
				if (rec.Unique == 0 || m.Unique == 0) && c.Releasing {
					continue
				}
				return c, at, nil
			}
		}
	}
	return nil, "", nil
}

// notOwnBind says why the mount of the volume found at cl's destination (dst) is not cl's bind,
// which its release would unmount: another claim's record names it at its own destination (that
// claim's bind, moved here), or cl's record names another mount there that is still mounted
// elsewhere (cl's own bind moved away, so this one is another's, or one made by hand). "" when
// it is the one cl records, or nothing recorded says otherwise: a claim recorded before schema
// version 29, as that volctl did; and one whose recorded bind is gone, which another claim
// sharing the destination (as an older volctl admitted them) or a restore may have bound again.
// Before, any mount cl's record did not name was refused, and a destination two such claims
// share, bound again by one, was left bound by both releases
// (TestSharedOlderDestinationBoundAgainByOneClaimIsReleasedByTheLast).
func (e *Engine) notOwnBind(ctx context.Context, cl *store.Claim, destination string, dst *pathFD) (string, error) {
	found, err := bindMountOf(dst.fd)
	if err != nil {
		return "", nil
	}
	return e.notOwnMount(ctx, cl, destination, found)
}

// notOwnMount is notOwnBind of the mount found at destination, its IDs read.
func (e *Engine) notOwnMount(ctx context.Context, cl *store.Claim, destination string, found store.BindMount) (string, error) {
	rec, recorded := recordedBind(cl, destination)
	if recorded && sameBindMount(rec, found) {
		return "", nil
	}
	other, at, err := e.bindOfAnother(ctx, cl, destination, found)
	if err != nil {
		return "", err
	}
	if other != nil {
		return fmt.Sprintf("it is alloc %q's volume_mount %s, moved there: not this claim's bind", other.Alloc, at), nil
	}
	if recorded {
		if moved := movedAway(rec, destination); moved != "" {
			return fmt.Sprintf("not the mount this claim's bind made there, which is mounted at %s now (moved there with a directory above it): another claim's bind, moved here, or one made by hand", moved), nil
		}
	}
	return "", nil
}

// recordedElsewhere are the mounts, of the table mounts, that cl records as its binds (this
// boot) and that are mounted at a path other than the destination they were made at: its
// binds, moved there. A mount's table ID may have been reused once it was unmounted: where the
// record has the unique ID, the mount at that path must have it too; where it has not, the path
// must be no live claim's destination (bound, as boundDestinations gives it).
func recordedElsewhere(cl *store.Claim, mounts []*mountinfo.Info, bound map[string]string) map[int]bool {
	if cl.BindMounts == nil {
		return nil
	}
	out := map[int]bool{}
	for dest := range cl.BindMounts.At {
		rec, ok := recordedBind(cl, dest)
		if !ok {
			continue
		}
		for _, m := range mounts {
			if uint64(m.ID) != rec.ID || m.Mountpoint == dest {
				continue
			}
			if rec.Unique == 0 && bound[m.Mountpoint] != "" {
				// The table's ID alone (before Linux 6.8), at a path a live claim's destination
				// names: most likely that claim's bind, given the ID once this one's was gone
				// (TestReusedMountIDOfAnotherClaimsBindIsNotTakenForTheClaimsBind).
				continue
			}
			if rec.Unique != 0 && uniqueMountID(unix.AT_FDCWD, m.Mountpoint) != rec.Unique {
				continue
			}
			out[m.ID] = true
		}
	}
	return out
}
