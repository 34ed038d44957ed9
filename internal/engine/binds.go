package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/mountflags"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// bind makes a published claim's group volume_mounts: its target bind-mounted at each
// destination with the propagation asked for, read-only when asked. It is idempotent, and
// returns the destinations it mounted (none when each was mounted already). A destination
// reaching an older volume_mount's directory by another path joined by propagation is refused
// (checkJoined), whether found mounted or not.
// Neither path is followed through a symlink (nofollow.go): the target is opened below the
// state dir, the destination from "/", each one component at a time, and the mount is made on
// their file descriptors.
// Each bind made, or found bound and taken as the claim's, is recorded as the claim's
// (bindrecord.go), in one write after them.
func (e *Engine) bind(ctx context.Context, cl *store.Claim) (bound []rebound, err error) {
	ctx = e.withPlaces(ctx) // one read of the mount table for the claim's binds, or the pass's, or the command's
	e.placesOf(ctx).fresh()
	recorded := cl.BindMounts
	defer func() {
		if cl.BindMounts != recorded {
			err = withFlushError(err, e.saveBindMounts(ctx, cl))
		}
	}()
	for _, i := range bindOrder(cl.Binds, true) {
		made, err := e.bindMount(ctx, cl, i)
		if err != nil {
			return bound, err
		}
		if made != notRebound {
			bound = append(bound, rebound{dest: cl.Binds[i].Destination, how: made})
		}
	}
	return bound, nil
}

// rebindKind is what bindMount did to a volume_mount found not as it was made.
type rebindKind int

const (
	notRebound    rebindKind = iota // bound as it was made, or refused
	boundAgain                      // not mounted: bound
	readOnlyAgain                   // the claim's own read-only bind, remounted writable since: made read-only
)

// rebound is a volume_mount a bind found not as it was made and made so again (bind): its
// destination, and what was done.
type rebound struct {
	dest string
	how  rebindKind
}

// reboundWords says what was done to binds, as an event or a report says it: "bound volume_mount
// A, B again (it was not mounted)", "made volume_mount C read-only again (it was remounted
// writable)", joined by "; ". Before, a read-only bind made so again was said nowhere: reconcile
// reported "Nothing to do" of a mount it changed under a running alloc
// (TestReconcileSaysItMadeAReadOnlyVolumeMountReadOnlyAgain).
func reboundWords(binds []rebound) string {
	var again, ro []string
	for _, b := range binds {
		if b.how == readOnlyAgain {
			ro = append(ro, b.dest)
		} else {
			again = append(again, b.dest)
		}
	}
	var out []string
	if len(again) > 0 {
		out = append(out, fmt.Sprintf("bound volume_mount %s again (it was not mounted)", strings.Join(again, ", ")))
	}
	if len(ro) > 0 {
		out = append(out, fmt.Sprintf("made volume_mount %s read-only again (it was remounted writable)", strings.Join(ro, ", ")))
	}
	return strings.Join(out, "; ")
}

// repairsKey carries, in a restore's context, where the binds of the claim it publishes say what
// they repaired (withRepairs).
type repairsKey struct{}

// withRepairs is ctx collecting the volume_mounts a publish's binds made read-only again
// (noteRepairs), for the restore that publishes to report: a restore whose bind mended a
// read_only volume_mount remounted writable said only "restored claim"
// (TestRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo).
func withRepairs(ctx context.Context) (context.Context, *[]rebound) {
	r := new([]rebound)
	return context.WithValue(ctx, repairsKey{}, r), r
}

// noteRepairs records, as events and for the collecting restore (withRepairs), the volume_mounts
// of claim cl that a publish's binds made read-only again (a first bind, or a restore's binding
// again, is the publish itself, not a repair).
func (e *Engine) noteRepairs(ctx context.Context, cl *store.Claim, bound []rebound) {
	var ro []rebound
	for _, b := range bound {
		if b.how == readOnlyAgain {
			ro = append(ro, b)
		}
	}
	if len(ro) == 0 {
		return
	}
	e.event(ctx, &store.Event{Kind: "restore", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: e.pluginOf(ctx, cl.VolumeID), Message: reboundWords(ro)})
	if r, ok := ctx.Value(repairsKey{}).(*[]rebound); ok {
		*r = append(*r, ro...)
	}
}

// bindMount binds cl's target at the destination of its volume_mount number i unless
// something is mounted there; made says what it did (notRebound: nothing).
func (e *Engine) bindMount(ctx context.Context, cl *store.Claim, i int) (made rebindKind, err error) {
	target, b := cl.TargetPath, cl.Binds[i]
	src, err := openNoFollow(e.cfg.StateDir, e.realPath(target), createNothing)
	if err != nil {
		return notRebound, fmt.Errorf("volume_mount %s: the claim's target: %w", b.Destination, err)
	}
	defer src.close()
	dir, err := src.isDir()
	if err != nil {
		return notRebound, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	}
	mode := createFile
	if dir {
		mode = createDirs
	}
	dst, err := openNoFollow("/", b.Destination, mode)
	if err != nil {
		return notRebound, volumeMountErr(b.Destination, err)
	}
	defer dst.close()
	mounted, err := dst.mounted()
	if err != nil {
		return notRebound, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	}
	if mounted {
		// Bound already, or something else is mounted there: an admin's disk, another
		// volume's staging path. That is not the volume, and volctl mounts neither over it
		// (hiding it from its users) nor hands it out as the volume.
		ours, err := dst.sameFile(src)
		if err != nil {
			return notRebound, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
		if !ours {
			return notRebound, fmt.Errorf("volume_mount %s: something else is mounted there, not this claim's volume: "+
				"volctl neither mounts over it nor hands it out as the volume; unmount it, or give the volume_mount another destination", b.Destination)
		}
		// The volume, but maybe an older claim's bind, propagated here from another path to
		// this directory (bindplace.go): not this claim's to take.
		if err := e.checkJoined(ctx, cl, i, dst); err != nil {
			return notRebound, err
		}
		// The volume, but writable where this bind is read-only (or the other way round): not
		// one this bind made, which bindFD makes as the bind asks. Another claim's bind of the
		// volume moved here with its parent directory (a rename by whoever owns it) is the same
		// file, and was handed out as this claim's: a read-only volume_mount writable
		// (TestReadOnlyVolumeMountIsNotHandedAWritersBindMovedToItsDestination).
		// The claim's own bind, its record naming this very mount, in another mode is one
		// remounted by hand (mount -o remount,bind,rw): made read-only again where the
		// volume_mount asks it to be; left writable, it was refused as another claim's, with
		// advice to give the volume_mount another destination, which the group run refuses
		// for an alloc holding the claim (TestOwnReadOnlyBindRemountedWritableIsMadeReadOnlyAgain).
		if why := bindModeDiffers(src, dst, b); why != "" {
			if !recordedHere(cl, b.Destination, dst) {
				return notRebound, refuseNotThisBind(b.Destination, dst, why+": not this claim's bind (another claim's, moved here?)")
			}
			if dstRO, err := readOnlyMount(dst.fd); err == nil && !dstRO { // read-only is what the bind asks
				if err := makeReadOnly(dst.fd, false); err != nil {
					return notRebound, fmt.Errorf("volume_mount %s: the claim's own bind there was made writable since it was bound (by hand?); making it read-only again: %w", b.Destination, err)
				}
				e.log.Warn(fmt.Sprintf("volume_mount %s of volume %q, alloc %q: the claim's bind there was writable (remounted since it was bound); made read-only again, as the volume_mount asks",
					b.Destination, cl.VolumeID, cl.Alloc))
				return readOnlyAgain, nil
			}
			return notRebound, conflictf("volume_mount %s: the claim's own bind there is %s (remounted since it was bound): volctl does not make it writable under whoever made it read-only; "+
				"`%s` makes it as the volume_mount asks", b.Destination, why, "mount -o remount,bind,rw "+shellquote.Arg(b.Destination))
		}
		// In this bind's mode: the claim's own, unless its record names another mount, or
		// another claim's names this one at its own destination (bindrecord.go).
		return notRebound, e.ownBind(ctx, cl, b.Destination, dst)
	}
	// Something mounted below the destination (another volume_mount, an admin's disk) would be
	// hidden under the bind, and its alloc would see this volume's directory there instead:
	// refused as a mount at the destination itself is. A group binds an alloc's volume_mounts
	// outermost first (nestingOrder), so its own nested ones never meet this.
	if below := mountsBelow(b.Destination); len(below) > 0 {
		return notRebound, fmt.Errorf("volume_mount %s: %s mounted below it, which this bind would hide: volctl does not mount over it; "+
			"bind the outer destination first, or give the volume_mount another destination", b.Destination, listPaths(below))
	}
	// A live claim's volume_mount above the destination that is not bound (a restore failed or
	// not made yet after a reboot, a claim on its way) would hide this bind when it is made,
	// or rather be refused from then on, as it would hide this one: this one waits for it.
	if other, at, err := e.unboundAbove(ctx, cl, b.Destination); err != nil {
		return notRebound, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	} else if other != nil {
		return notRebound, fmt.Errorf("volume_mount %s lies below %s, alloc %q's volume_mount of volume %q, which is not bound (its claim not restored yet, "+
			"its restore failed, or its claim unfinished): bound now, it would be on the bare directory there and hidden by that bind; "+
			"left unbound for `volctl reconcile`, which binds %s first and this one on it", b.Destination, at, other.Alloc, other.VolumeID, at)
	}
	// The target must still be the volume's mount: a reconcile pass judges a target mounted by
	// the table it read at its start, and a reboot (or an unmount by hand) since leaves an
	// empty directory of the state dir there, which bound would hand the alloc the state
	// dir's disk as its volume, and hold the destination against the restore that follows
	// (TestReconcileDoesNotBindATargetUnmountedSinceItReadTheTable). Read from the table, as
	// reconcile's checks are: a statfs of a dead NFS mount would block.
	if mp, err := e.mountedByTable(target); err != nil {
		return notRebound, fmt.Errorf("volume_mount %s: checking that the claim's target %s is mounted: %w", b.Destination, target, err)
	} else if !mp.Mounted {
		return notRebound, &targetUnmounted{target: target, dest: b.Destination}
	}
	// A bind here would be made, by propagation, at an older claim's destination reaching this
	// directory by another path (bindplace.go), over or under its bind.
	if err := e.checkJoined(ctx, cl, i, dst); err != nil {
		return notRebound, err
	}
	// A destination is a host path: what is there already (an application's files, /etc's)
	// would be hidden from everyone on the host while the volume is bound over it, and the
	// alloc would see the volume where its owner's files were. volctl binds only on an empty
	// directory or file, as it makes them.
	if err := hidesNothing(dst, b.Destination); err != nil {
		return notRebound, err
	}
	if err := fitsAttachment(dst, b.Destination, dir); err != nil {
		return notRebound, err
	}
	// The bind this claim made here, recorded, mounted elsewhere now (moved with a directory
	// above the destination, onto another claim's destination maybe) is still the claim's: bound
	// again, its record would name the new bind alone, and nothing would name the moved one,
	// left bound past both claims' releases (TestReboundClaimKeepsTheRecordOfItsMovedBind).
	if rec, ok := recordedBind(cl, b.Destination); ok {
		if at := movedAway(rec, b.Destination); at != "" {
			return notRebound, fmt.Errorf("volume_mount %s: the claim's bind made there is mounted at %s now, moved there with a directory above it: "+
				"volctl neither binds the destination again while it is nor unmounts it where it went; unmount it (`%s`) once nothing uses it, and the destination is bound again",
				b.Destination, at, shellquote.Command("umount", at))
		}
	}
	// A record of a bind here that is gone (unmounted by hand, or by a release whose claim is
	// driven again) is dropped first: a failed write of the new one would leave it naming a
	// mount that is not there, and the bind about to be made would be taken for another's.
	if forgetBindAt(cl, b.Destination) {
		if err := e.saveBindMounts(ctx, cl); err != nil {
			return notRebound, fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
	}
	m, err := bindFD(src, dst, b)
	if err != nil {
		return notRebound, err
	}
	noteBind(cl, b.Destination, m)
	e.placesOf(ctx).noteBound(b.Destination, dst)
	return boundAgain, nil
}

// refuseNotThisBind is bind's refusal of the mount of the volume it found at destination (dst),
// why not this claim's (notThisBind).
func refuseNotThisBind(destination string, dst *pathFD, why string) error {
	err := conflictf("volume_mount %s: the volume is mounted there already, but %s, "+
		"which volctl does not hand out as this one; give the volume_mount another destination, or find whose bind it is (findmnt %s)", destination, why, destination)
	if id, idErr := mountID(dst.fd); idErr == nil {
		err = &notThisBind{dest: filepath.Clean(destination), id: id, err: err}
	}
	return err
}

// ownBind checks that the mount of the volume found at destination (dst), in the mode cl's bind
// there makes, is cl's bind (notOwnBind); one not recorded (a bind made before its record was
// written, by a volctl before schema version 29, or again by a claim sharing the destination)
// cl records as its own.
func (e *Engine) ownBind(ctx context.Context, cl *store.Claim, destination string, dst *pathFD) error {
	if rec, ok := recordedBind(cl, destination); ok && rec.Unique != 0 && uniqueMountID(dst.fd, "") == rec.Unique {
		return nil // the one recorded, as every pass over a bound claim finds it: one statx
	}
	found, err := bindMountOf(dst.fd)
	if err != nil {
		return nil // its IDs unread: taken as before the record
	}
	why, err := e.notOwnMount(ctx, cl, destination, found)
	if err != nil {
		return fmt.Errorf("volume_mount %s: %w", destination, err)
	}
	if why != "" {
		return refuseNotThisBind(destination, dst, why)
	}
	noteBind(cl, destination, found) // no change when it is the one recorded
	return nil
}

// notThisBind is bind's refusal of a destination where the volume is mounted already, but not
// as this claim's bind makes it (bindModeDiffers): another claim's bind, moved there. The
// release that undoes the claim in the same command (its rollback; or, when that rollback
// failed and left the claim, a group run's release of it) leaves that mount, mount id, at dest, where a release
// otherwise unmounts the volume it finds at its destination
// (TestRefusedBindsRollbackLeavesTheMovedBind). A release in a later command cannot tell such
// a mount from one the claim's bind made: no record says which mount a bind made.
type notThisBind struct {
	dest string
	id   uint64
	err  error
}

func (n *notThisBind) Error() string { return n.err.Error() }
func (n *notThisBind) Unwrap() error { return n.err }

// leftBindKey carries, in a rollback's context, the bind refusal that caused it (notThisBind).
type leftBindKey struct{}

// leavingRefusedBind is ctx for the release that undoes a claim whose publish failed with
// cause: when its bind was refused for a mount of the volume not this claim's (notThisBind),
// that release leaves the mount (leftByRollback).
func leavingRefusedBind(ctx context.Context, cause error) context.Context {
	if n := (*notThisBind)(nil); errors.As(cause, &n) {
		return context.WithValue(ctx, leftBindKey{}, n)
	}
	return ctx
}

// leftByRollback reports whether dst, opened at a claim's volume_mount destination, is the
// mount the bind refusal that this rollback undoes found there (notThisBind).
func leftByRollback(ctx context.Context, destination string, dst *pathFD) bool {
	n, ok := ctx.Value(leftBindKey{}).(*notThisBind)
	if !ok || n.dest != filepath.Clean(destination) {
		return false
	}
	id, err := mountID(dst.fd)
	return err == nil && id == n.id
}

// hidesNothing refuses a bind on dst, opened at destination, when something is there that the
// bind would hide (pathFD.hidden).
func hidesNothing(dst *pathFD, destination string) error {
	what, err := dst.hidden()
	if err != nil {
		return fmt.Errorf("volume_mount %s: reading what is there: %w", destination, err)
	}
	if what != "" {
		return fmt.Errorf("volume_mount %s is %s, which the bind would hide from every user of the host until the claim is released: "+
			"volctl binds a volume only on an empty directory (or empty file); move what is there away, or give the volume_mount another destination", destination, what)
	}
	return nil
}

// fitsAttachment refuses a bind of a file-system volume (a directory, wantDir) on dst, opened at
// destination, when dst is not a directory, or of a block volume (its device file) when it is
// one: the mount cannot be made ("not a directory"), and a destination of the other kind is
// someone's file or directory, not volctl's to replace.
func fitsAttachment(dst *pathFD, destination string, wantDir bool) error {
	dir, err := dst.isDir()
	switch {
	case err != nil:
		return fmt.Errorf("volume_mount %s: %w", destination, err)
	case wantDir && !dir:
		return fmt.Errorf("volume_mount %s is a file, and a file-system volume is bound on a directory: remove the file, or give the volume_mount another destination", destination)
	case !wantDir && dir:
		return fmt.Errorf("volume_mount %s is a directory, and a block volume is bound on a file (its device file): remove the directory, or give the volume_mount another destination", destination)
	}
	return nil
}

// bindsBindable refuses, before a claim is admitted, a volume_mount destination its bind would
// refuse for what is on the host now: a symlink on its way, a file on its way, and, at a
// destination not mounted on, what the bind would hide (hidesNothing) or a file where a
// directory is bound or the other way round (fitsAttachment, by the request's attachment mode).
// Nothing is sent or recorded, where the claim was staged and published, its bind refused, and
// the claim released again (or, in a group run, rolled back by the run): four RPCs, and with a
// plugin that attaches six, each of which may fail and leave the claim for reconcile. A destination mounted on already (bound,
// or something else there) is left to the bind, which knows the claim's target to tell which.
// The bind checks all of it again: this is the common case, early.
func bindsBindable(binds []spec.VolumeMount, mode spec.AttachmentMode) error {
	for _, b := range binds {
		dst, err := openNoFollow("/", b.Destination, createNothing)
		if errors.Is(err, os.ErrNotExist) {
			continue // made by the bind; a symlink before the missing part is met first
		}
		if err != nil {
			return &kindWrap{kind: ErrConflict, err: volumeMountErr(b.Destination, err)}
		}
		mounted, err := dst.mounted()
		switch {
		case err != nil:
			err = fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		case !mounted:
			if err = hidesNothing(dst, b.Destination); err == nil && mode != "" {
				err = fitsAttachment(dst, b.Destination, mode == spec.FileSystem)
			}
			if err != nil {
				err = &kindWrap{kind: ErrConflict, err: err}
			}
		}
		dst.close()
		if err != nil {
			return err
		}
	}
	return nil
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

// bindOrder is the order a claim's own volume_mounts are bound in (outerFirst) or unbound in:
// their indices in nestingOrder, so one volume mounted twice, at /t and below it at /t/logs,
// is bound at /t first (the inner bind on the outer's directory, not refused as hidden) and
// unbound at /t/logs first (the outer unmount is EBUSY while the inner is mounted), whichever
// order the group lists them in.
func bindOrder(binds []spec.VolumeMount, outerFirst bool) []int {
	idx := make([]int, len(binds))
	for i := range idx {
		idx[i] = i
	}
	return nestingOrder(idx, func(i int) []string { return []string{binds[i].Destination} }, outerFirst)
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

// bindFD bind-mounts src on dst, both opened paths, then sets the propagation (and, where the
// kernel could not make it so before, the read-only flag) on the new mount, reached again
// through dst's parent. Anything that fails after the mount undoes it.
func bindFD(src, dst *pathFD, b spec.VolumeMount) (store.BindMount, error) {
	readOnly, err := attachBind(src, dst, b.ReadOnly)
	if err != nil {
		return store.BindMount{}, fmt.Errorf("volume_mount %s: bind mount: %w", b.Destination, err)
	}
	fail := func(step string, err error) (store.BindMount, error) {
		_ = undoMountOn(dst)
		return store.BindMount{}, fmt.Errorf("volume_mount %s: %s: %w", b.Destination, step, err)
	}
	m, err := dst.reopenMount(src)
	if err != nil {
		return fail("open the new mount", err)
	}
	defer unix.Close(m)
	if err := unix.Mount("", procPath(m), "", propagationFlag(b.PropagationMode)|unix.MS_REC, ""); err != nil {
		return fail("set propagation", err)
	}
	if b.ReadOnly && !readOnly {
		if err := makeReadOnly(m, true); err != nil {
			return fail("remount read-only", err)
		}
	}
	made, err := bindMountOf(m)
	if err != nil {
		return fail("read the new mount's ID", err)
	}
	return made, nil
}

// attachBind bind-mounts src (recursively) on dst as mountOn does; when ro, read-only from the
// moment it is attached: the tree is cloned unattached (open_tree), made read-only there
// (mount_setattr, which sets that flag alone: the target's nosuid, nodev, noexec,
// nosymfollow and atime rule stay), then moved onto dst. Bound writable and remounted
// read-only after, as before, the copies that propagation made of it at once (dst below a
// shared mount, as / is on systemd hosts) stayed writable, and the volume was written through
// them (TestReadOnlyVolumeMountIsReadOnlyWhereverPropagationCarriesIt). readOnly says it was
// made so: not on a kernel without those calls (before Linux 5.12), where the bind is made as
// mountOn makes it, and the caller remounts it.
func attachBind(src, dst *pathFD, ro bool) (readOnly bool, err error) {
	if !ro || withoutMountSetattr.Load() {
		return false, mountOn(src, dst)
	}
	tree, err := unix.OpenTree(src.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOSYS) {
		return false, mountOn(src, dst)
	}
	if err != nil {
		return false, fmt.Errorf("copy the target's mount: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); errors.Is(err, unix.ENOSYS) {
		return false, mountOn(src, dst)
	} else if err != nil {
		return false, fmt.Errorf("make the copy read-only: %w", err)
	}
	if err := unix.MoveMount(tree, "", dst.fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return false, err
	}
	return true, nil
}

// makeReadOnly makes the mount whose root fd is read-only, and nothing else of it changed:
// mount_setattr sets that flag alone. Without it (before Linux 5.12), a bind remount sets every
// per-mount flag it is given and clears the others: it is given the mount's own (statfs), which
// a remount given MS_RDONLY alone cleared, a read_only volume_mount losing the claim's noexec,
// nosuid and nodev and the plugin root's nosymfollow (TestReadOnlyVolumeMountKeepsTheClaimsNoexec).
// withFlags says to go straight to the remount (the kernel said it has no mount_setattr).
func makeReadOnly(fd int, withFlags bool) error {
	if !withFlags && !withoutMountSetattr.Load() {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	return unix.Mount("", procPath(fd), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|mountflags.Carried(st.Flags), "")
}

// withoutMountSetattr has attachBind and makeReadOnly do as on a kernel without mount_setattr,
// for tests of that way.
var withoutMountSetattr atomic.Bool

// recordedHere says the mount at destination (dst) is the one cl's record of its bind there
// names (bindrecord.go): by its unique mount ID where the kernel gives one, else by its ID, both
// recorded this boot in this mount namespace. Not recorded is not this.
func recordedHere(cl *store.Claim, destination string, dst *pathFD) bool {
	rec, ok := recordedBind(cl, destination)
	if !ok {
		return false
	}
	if rec.Unique != 0 {
		return uniqueMountID(dst.fd, "") == rec.Unique
	}
	found, err := bindMountOf(dst.fd)
	return err == nil && found.ID == rec.ID
}

// bindModeDiffers says how the mount at dst, a mount of src, is not as bindFD makes b's bind:
// read-only when b or the target src is, else writable; "" when it is, or cannot be told.
func bindModeDiffers(src, dst *pathFD, b spec.VolumeMount) string {
	srcRO, err := readOnlyMount(src.fd)
	if err != nil {
		return ""
	}
	dstRO, err := readOnlyMount(dst.fd)
	if err != nil {
		return ""
	}
	switch want := b.ReadOnly || srcRO; {
	case want && !dstRO:
		return "writable, where this bind is read-only"
	case !want && dstRO:
		return "read-only, where this bind is writable"
	}
	return ""
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
// detach, marking them all releasing, unbinds it at once). So is a bind such a claim reaches
// at another path joined by propagation (joinedDestination) whose own unmount there will be
// made here too (the same mount, or this one receiving the other's: reachedBy), so that the
// last one's release unbinds it; a bind at a master, the claim at its slave, is unmounted
// (and the slave's copy with it: reconcile binds that claim again), since the slave's
// unmount would leave it bound with no claim naming it.
// The destination is resolved as bind resolves it, without following a symlink, and unmounted
// through the file descriptor of its parent.
func (e *Engine) unbind(ctx context.Context, cl *store.Claim) error {
	var others map[string]string // the volume's other claims' destinations, read once when needed
	var places *placeView        // the mount table, read once when needed (bindplace.go)
	var linked error             // the first destination met through a symlink
	if v, ok := ctx.Value(placesKey{}).(*placeView); ok && v.relist {
		places = v // a group command's, read once for all its releases
		places.fresh()
	}
	for _, i := range bindOrder(cl.Binds, false) {
		b := cl.Binds[i]
		dst, err := openNoFollow("/", b.Destination, createNothing)
		var link *symlinkError
		if errors.As(err, &link) && linked == nil {
			link.Advice = "volctl never binds through one, so nothing of the claim's is mounted by that path"
			linked = volumeMountErr(b.Destination, err)
		}
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENAMETOOLONG) || errors.Is(err, unix.ENOTDIR) || link != nil {
			// No bind of volctl's is there to unmount: the path does not exist, cannot (a name
			// past the file system's bound), leads through a symlink, where bind never mounts
			// (/var/run on Debian), or no longer leads anywhere (a component made a file). Each
			// refused at the bind, the claim's release then failed the same way at this walk,
			// leaving it releasing with no release that could end
			// (TestVolumeMountPastNameMaxIsReleased, TestVolumeMountThroughASymlinkIsReleased).
			// A bind moved away since it was made (a directory renamed, a file or a link made
			// in its place) is movedBinds', whose refusal then names the link too
			// (TestUnbindRefusesSymlinkedDestination).
			continue
		}
		if err != nil {
			return volumeMountErr(b.Destination, err)
		}
		mounted, err := dst.mounted()
		elsewhere := err == nil && mounted && e.boundElsewhere(cl.TargetPath, dst)
		if err == nil && mounted {
			// The claim's bind may be below what is on top, covered by someone's mount since:
			// the release would unmount nothing of its own, or the cover, and end with the
			// volume bound there, writable, no claim holding it
			// (TestReleaseOfABindCoveredByAnotherMountIsRefused,
			// TestReleaseOfACoveredBindWithItsTargetUnmountedLeavesTheCover). Returned once dst
			// is closed, below: a descriptor left open in the destination keeps what covers it
			// busy to the umount the error advises.
			if over, cerr := e.bindCovered(cl, b.Destination, dst, elsewhere); cerr != nil {
				err, mounted = fmt.Errorf("finding whether the claim's bind is below what is mounted there: %w", cerr), false
			} else if over > 0 {
				err, mounted = &bindCoveredError{destination: b.Destination, over: over}, false
			}
		}
		if err == nil && mounted && elsewhere {
			mounted = false
		}
		if err == nil && mounted && leftByRollback(ctx, b.Destination, dst) {
			e.log.Info(fmt.Sprintf("volume_mount %s of volume %q left bound: the claim's bind was refused there, the volume mounted already but not as this bind makes it (another claim's bind, moved there?)", b.Destination, cl.VolumeID),
				"volume", cl.VolumeID, "alloc", cl.Alloc)
			mounted = false
		}
		if err == nil && mounted {
			var why string
			if why, err = e.notOwnBind(ctx, cl, b.Destination, dst); why != "" {
				e.log.Info(fmt.Sprintf("volume_mount %s of volume %q left bound: %s", b.Destination, cl.VolumeID, why),
					"volume", cl.VolumeID, "alloc", cl.Alloc)
				mounted = false
			}
		}
		if err == nil && mounted && others == nil {
			others, _, err = e.boundDestinations(ctx, cl.VolumeID, func(c store.Claim) bool { return c.ID != cl.ID && !c.Releasing })
		}
		if alloc := others[filepath.Clean(b.Destination)]; err == nil && mounted && alloc != "" {
			e.log.Info(fmt.Sprintf("volume_mount %s of volume %q left bound: alloc %q's claim of the volume is bound there too, and its release unbinds it", b.Destination, cl.VolumeID, alloc),
				"volume", cl.VolumeID, "alloc", cl.Alloc)
			mounted = false
		}
		if err == nil && mounted {
			// Reached by another claim of the volume by another path joined by propagation
			// (bindplace.go): unmounted here, it would be unmounted there too.
			var other *store.Claim
			var at string
			if places == nil {
				places = e.newPlaces() // not a pass's: this release's unmounts change the table
			}
			other, at, err = e.joinedDestination(ctx, places, cl, b.Destination, dst, func(c store.Claim, _ int) bool {
				return c.ID != cl.ID && !c.Releasing && c.VolumeID == cl.VolumeID
			}, func(v *placeView, theirs, mine *mountinfo.Info) bool { return v.reachedBy(mine, theirs) })
			if other != nil {
				e.log.Info(fmt.Sprintf("volume_mount %s of volume %q left bound: alloc %q's claim of the volume is bound at %s, the same directory by another path joined by mount propagation, and its release unbinds it",
					b.Destination, cl.VolumeID, other.Alloc, at), "volume", cl.VolumeID, "alloc", cl.Alloc)
				mounted = false
			}
		}
		if err == nil && mounted {
			id, idErr := mountID(dst.fd)
			var below []string
			if below, err = unmountBind(ctx, dst, b.Destination); err == nil && places != nil && idErr == nil {
				places.noteUnbound(id)
			}
			if errors.Is(err, unix.EBUSY) {
				if len(below) > 0 {
					err = &mountedBelow{err: err, below: below}
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
	if err := e.movedBinds(ctx, cl); err != nil {
		if linked != nil {
			return fmt.Errorf("%v; %w", linked, err)
		}
		return err
	}
	return nil
}

// busyUnbindWait is how long unmountBind tries a bind's unmount again while it is EBUSY with
// nothing mounted below it.
const busyUnbindWait = 500 * time.Millisecond

// unmountBind unmounts the bind dst opened at destination. One answered EBUSY with nothing
// mounted below it is tried again, at doubling intervals up to busyUnbindWait in all: a holder
// gone a moment later (a child forked while a descriptor on the bind was open, until its exec
// closes it; a scan of the tree passing through) does not fail the release and leave its claim
// unpublishing (TestUnbindIsNotMadeBusyByAProcessThisOneStarts). A file open in it, or a
// working directory, past that is the user's, and the error says so. It returns what is
// mounted below the destination, when that made it busy.
func unmountBind(ctx context.Context, dst *pathFD, destination string) (below []string, err error) {
	err = dst.unmount(0)
	for waited, d := time.Duration(0), time.Millisecond; errors.Is(err, unix.EBUSY); waited, d = waited+d, 2*d {
		if below = mountsBelow(destination); len(below) > 0 || waited >= busyUnbindWait {
			return below, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(d):
		}
		err = dst.unmount(0)
	}
	return nil, err
}

// mountedBelow is unbind's EBUSY for a bind with mounts below it (another volume_mount, an
// admin's disk), which its unmount would need gone first.
type mountedBelow struct {
	err   error
	below []string
}

func (m *mountedBelow) Error() string {
	return fmt.Sprintf("unmount: %v: %s mounted below it; unmount or release that first", m.err, listPaths(m.below))
}

func (m *mountedBelow) Unwrap() error { return m.err }

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
	ofVolume := func(m *mountinfo.Info) bool {
		return m.Major == target.Major && m.Minor == target.Minor && m.Root == target.Root
	}
	// A live claim's bind made on a mount with shared propagation is made at every path that
	// mount is reached by too (a peer of it: an admin's bind of a directory above the
	// destination, shared, as "/" is on systemd hosts), and unmounted there with it. Such a copy
	// is on the directory the bind is on, by another path: that claim's bind, not one of this
	// claim's moved away, and unmounted by hand, as the error below asks, it would take the
	// other claim's bind down with it, from under its alloc. The directory a mount is on is
	// its parent's file system and root joined with the rest of its path (dirOf).
	byID := make(map[int]*mountinfo.Info, len(mounts))
	for _, m := range mounts {
		byID[m.ID] = m
	}
	dirOf := func(m *mountinfo.Info) (devRoot, bool) {
		p := byID[m.Parent]
		if p == nil || !underOrAt(m.Mountpoint, p.Mountpoint) {
			return devRoot{}, false
		}
		rel, err := filepath.Rel(p.Mountpoint, m.Mountpoint)
		return devRoot{p.Major, p.Minor, filepath.Join(p.Root, rel)}, err == nil
	}
	// A copy is one only when propagation put it there: its parent receives the mounts made on
	// the live bind's parent (placeView.receives). A moved bind on that directory by another
	// path, through an admin's private bind of it, is this claim's, and named.
	boundOn := map[devRoot][]*mountinfo.Info{} // the parents of the live binds on a directory
	for _, m := range mounts {
		if d, ok := dirOf(m); ok && ofVolume(m) && bound[m.Mountpoint] != "" && byID[m.Parent] != nil {
			boundOn[d] = append(boundOn[d], byID[m.Parent])
		}
	}
	prop := &placeView{masterOf: mastersOf(mounts)}
	copied := func(m *mountinfo.Info) bool {
		d, ok := dirOf(m)
		return ok && slices.ContainsFunc(boundOn[d], func(from *mountinfo.Info) bool { return prop.reachedBy(byID[m.Parent], from) })
	}
	// A bind the claim records making is its own wherever it is found, at another claim's
	// destination too: before the record, one moved to where another claim of the volume
	// names was taken for that claim's, and left bound past this claim's release. Still a mount
	// of the volume, outside the state dir: before Linux 6.8 the record holds only the table's
	// ID, which the next mount made may be given once the bind is gone
	// (TestReusedMountIDOfAnotherMountIsNotTakenForTheClaimsBind).
	recorded := recordedElsewhere(cl, mounts, bound)
	var moved []string
	for _, m := range mounts {
		if ofVolume(m) && m.Mountpoint != e.cfg.StateDir && !under(m.Mountpoint, e.cfg.StateDir) &&
			(recorded[m.ID] || names[filepath.Base(m.Mountpoint)] && bound[m.Mountpoint] == "" && !copied(m)) {
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

// bindCoveredError is unbind's refusal of a claim whose bind at destination has over mounts
// stacked on it: volctl unmounts only its own bind, and the release, or a forced detach, would
// free the claim with the volume bound below, writable (forceDetach stops at it, as at a
// mountedBelow: TestForcedDetachOfACoveredBindLeavesNoBindWithoutAClaim).
type bindCoveredError struct {
	destination string
	over        int
}

func (b *bindCoveredError) Error() string {
	return fmt.Sprintf("the claim's bind there has %d mount(s) stacked over it (mounted there since it was bound): volctl unmounts only its own bind, "+
		"and the release would leave the volume bound below them, writable, with no claim: unmount them (`%s`, %d time(s)), then run `volctl reconcile`",
		b.over, shellquote.Command("umount", b.destination), b.over)
}

// bindCovered says how many mounts are stacked over cl's bind at volume_mount destination, dst
// opened there: by its record, the bind's mount ID among the mounts at the destination below the
// topmost (a mount's ID is not given again while it is mounted), the table read only when the
// topmost is not the recorded bind (a release's common case reads none); else, with no record
// of this boot, by what its mount shows (bindUnderCover), which needs the target mounted;
// elsewhere is boundElsewhere's answer for dst, asked once by the caller.
func (e *Engine) bindCovered(cl *store.Claim, destination string, dst *pathFD, elsewhere bool) (int, error) {
	rec, ok := recordedBind(cl, destination)
	if !ok || rec.ID == 0 {
		if !elsewhere {
			return 0, nil // the claim's bind on top, or nothing proves otherwise
		}
		return e.bindUnderCover(cl.TargetPath, destination)
	}
	if top, err := bindMountOf(dst.fd); err == nil && sameBindMount(rec, top) {
		return 0, nil
	}
	dest := filepath.Clean(destination)
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return m.Mountpoint != dest, false })
	if err != nil {
		return 0, store.MountTableUnreadable(err)
	}
	// Stacked on one path, down the parents of the mount the path leads to (chainAt): in the
	// table's order, a cover moved over the bind was listed below it, and the bind read as on top
	// (TestReleaseOfABindUnderACoverMovedOverItIsRefused).
	mounts = chainAt(dest, mounts)
	for i := len(mounts) - 2; i >= 0; i-- {
		if uint64(mounts[i].ID) == rec.ID {
			return len(mounts) - 1 - i, nil
		}
	}
	return 0, nil
}

// bindUnderCover says how many mounts are stacked over a bind of the claim's target (by what
// its mount shows: the target's file system and root) at volume_mount destination dest, 0 when
// none is below the topmost or the MountTable cannot say (a test's) or the target is not mounted.
func (e *Engine) bindUnderCover(target, dest string) (int, error) {
	sr, ok := e.cfg.Mounts.(stackReader)
	mr, ok2 := e.cfg.Mounts.(mountRoots)
	if !ok || !ok2 {
		return 0, nil
	}
	real := e.realPath(target)
	roots, err := mr.MountRoots(real)
	if err != nil {
		return 0, err
	}
	mine := roots[real]
	if mine.root == "" {
		return 0, nil
	}
	stack, err := sr.StackAt(dest)
	if err != nil {
		return 0, err
	}
	for i := len(stack) - 2; i >= 0; i-- {
		if stack[i] == mine {
			return len(stack) - 1 - i, nil
		}
	}
	return 0, nil
}

// forceUnmount detaches whatever is mounted at path, one of volctl's own target and staging
// paths below the state dir (root), when a forced detach runs without the plugin. Lazy
// (MNT_DETACH), because a plugin that is gone may have left the mount busy, and a forced
// detach must not stop for that. The path is opened as bind opens it, without following a
// symlink planted in the state dir, and unmounted through its parent's descriptor: a link in
// place of publish/<alloc> must not make root unmount what is mounted where it points.
//
// A plain unmount is tried first: one that is busy (a process's working directory or open file
// inside it, an alloc still running) is unmounted lazily all the same, and the error says so,
// since the file system stays mounted for those processes, which go on using the volume: before,
// the detach said nothing of it, and the volume was told free while a writer still had it
// (TestForcedDetachOfABusyTargetSaysItIsStillInUse).
func forceUnmount(root, path string) error {
	busy := false
	var below []string // mounts below path when its unmount was busy: the lazy one takes them too
	for {
		p, err := openNoFollow(root, path, createNothing)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		mounted, err := p.mounted()
		if err == nil && mounted {
			if err = p.unmount(0); errors.Is(err, unix.EBUSY) {
				if below = mountsBelow(path); len(below) == 0 {
					// Busy without mounts below it: a process in it, or, for a moment, a copy of
					// the descriptor in a child this process forked (pathFD.unmount), waited out
					// as an unbind waits it.
					for waited, d := time.Duration(0), time.Millisecond; errors.Is(err, unix.EBUSY) && waited < busyUnbindWait; waited, d = waited+d, 2*d {
						time.Sleep(d)
						err = p.unmount(0)
					}
				}
				busy = busy || errors.Is(err, unix.EBUSY)
			}
			if errors.Is(err, unix.EBUSY) {
				err = p.unmount(unix.MNT_DETACH)
			}
			if err != nil {
				err = fmt.Errorf("unmount %s: %w", path, err)
			}
		}
		p.close()
		if err != nil {
			return err
		}
		if !mounted {
			break
		}
	}
	switch {
	case busy && len(below) > 0:
		// Which of the two made it busy the kernel does not say: said as both, where it said
		// nothing (TestForcedDetachOfABusyTargetWithAMountBelowItSaysItIsStillInUse).
		return fmt.Errorf("%s was busy (%s mounted below it, and it may be in use by a process, its working directory or a file open in it): unmounted lazily with what is below it; "+
			"a process using it keeps it mounted for itself, and can still read and write the volume through it until it lets go of it", path, listPaths(below))
	case busy:
		return fmt.Errorf("%s was in use (a process has its working directory or a file open in it): unmounted lazily, it stays mounted for those processes, "+
			"which can still read and write the volume through it until they let go of it", path)
	}
	return nil
}
