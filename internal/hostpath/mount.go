package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/mountflags"
)

// Mounter makes and removes the plugin's bind mounts. SystemMounter is the real one; tests
// substitute a Mounter that fails with EPERM to exercise the no-privileges path as any user.
type Mounter interface {
	// BindMount bind-mounts source onto target (an existing directory), then applies flags
	// (unix.MS_RDONLY, MS_NOEXEC, ...) with a remount, since a bind ignores them, keeping those
	// of the mount the directory carry is on (the host's nosuid of the plugin's root; "" for
	// source's), not those of source's mount: a target bound from a staging mounted with one
	// claim's noexec gets its own claim's flags.
	BindMount(source, target, carry string, flags uintptr) error
	// Unmount removes the mount at target.
	Unmount(target string) error
	// IsMountPoint reports whether path is a mount point; a missing path is not one.
	IsMountPoint(path string) (bool, error)
	// Holds reports whether what path, a mount point of the plugin's, shows is what the
	// plugin mounted there, a bind of the volume's directory dir (root/volumes/<id>): not when
	// something else was mounted over it since, or in its place.
	Holds(path, dir string) (bool, error)
	// Shows reports whether path (a mount point of the plugin's) shows the directory dir as it
	// is now: the same directory, not another made at its name since.
	Shows(path, dir string) (bool, error)
}

// FlagsApplier is a Mounter that can give a bind made already the flags BindMount would have
// given it (ApplyFlags): what an RPC sent again after a crash between BindMount's bind and its
// remount completes. A Mounter without it (a test's fake, whose binds carry no flags) leaves
// such a bind as it is.
type FlagsApplier interface {
	ApplyFlags(target, carry string, flags uintptr) error
}

// SystemMounter mounts with the kernel's mount(2) and detects mounts with mountinfo.
type SystemMounter struct{}

// BindMount implements Mounter.
func (SystemMounter) BindMount(source, target, carry string, flags uintptr) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return &os.PathError{Op: "bind-mount " + source + " on", Path: target, Err: err}
	}
	// A remount replaces the mount's flags, and the kernel refuses (EPERM) to clear flags that
	// are locked on the source (nosuid, nodev, ... inherited in a user namespace), so keep those
	// of the mount carry is on: a bind copies the flags of the mount it is made of, which for a
	// target bound from its staging were the staging claim's, kept by the remount, so that
	// every later claim had the first one's noexec or ro
	// (TestPublishDoesNotInheritTheStagingClaimsMountFlags).
	if carry == "" {
		carry = source
	}
	if err := remountWith(target, carry, flags, flags != 0); err != nil {
		_ = unix.Unmount(target, 0)
		return err
	}
	return nil
}

// ApplyFlags implements FlagsApplier: the remount of BindMount alone, on a bind made already,
// when its flags are not those flags and carry's mount give. A process that ended between
// BindMount's two mount(2) calls (killed, or Serve stopped while the RPC ran) left its bind
// with the source's flags, read-write for a read-only claim, and the RPC sent again found it
// mounted and answered OK (TestPublishRetriedAfterACrashBetweenBindAndRemountIsReadOnly).
func (SystemMounter) ApplyFlags(target, carry string, flags uintptr) error {
	return remountWith(target, carry, flags, false)
}

// remountWith remounts the bind at target with flags and those of carry's mount it must keep
// (carriedFlags); unless always, only when its flags differ from those.
func remountWith(target, carry string, flags uintptr, always bool) error {
	var st, at unix.Statfs_t
	if err := unix.Statfs(carry, &st); err != nil {
		return &os.PathError{Op: "statfs", Path: carry, Err: err}
	}
	if err := unix.Statfs(target, &at); err != nil {
		return &os.PathError{Op: "statfs", Path: target, Err: err}
	}
	carried := carriedFlags(int64(st.Flags))
	if flags&atimeFlags != 0 {
		// The claim's own atime rule, not the root's: MS_STRICTATIME, applied last, cleared a
		// noatime asked for (TestClaimsAtimeFlagHonouredOnAStrictatimeRoot).
		carried &^= atimeFlags
	}
	want := flags | carried
	if !always && carriedFlags(int64(at.Flags)) == want {
		return nil // as wanted already
	}
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|want, ""); err != nil {
		return &os.PathError{Op: "remount", Path: target, Err: err}
	}
	return nil
}

// Shows implements Mounter: by device and inode, which a bind shares with its source, of what
// path shows, its topmost mount.
func (SystemMounter) Shows(path, dir string) (bool, error) {
	a, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	b, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// carriedFlags maps the statfs flags of an existing mount to the mount(2) flags a remount must
// repeat (mountflags.Carried): nosymfollow too (a remount clears what it is not given: a target
// of a nosymfollow root followed the links its consumers planted,
// TestPublishKeepsTheRootMountsNosymfollow), and strictatime where statfs reports no atime flag
// (TestPublishOnAStrictatimeRootDoesNotGetTheStagingClaimsNoatime).
func carriedFlags(st int64) uintptr { return mountflags.Carried(st) }

// atimeFlags are the mount flags of an atime rule, which a mount has one of.
const atimeFlags = unix.MS_NOATIME | unix.MS_RELATIME | unix.MS_STRICTATIME

// Unmount implements Mounter. It tries a plain unmount first, so a mount still in use is noticed;
// on EBUSY (a consumer still has a file open or its working directory inside) it detaches the
// mount lazily instead of failing the release forever: the mount leaves the namespace now and
// the kernel drops it when the last user goes. Nothing is lost, since the data lives in the
// volume directory, not in the mount.
func (SystemMounter) Unmount(target string) error {
	// Never through a symlink at target: what it leads to is not the plugin's mount
	// (TestUnpublishDoesNotUnmountWhatASymlinkAtTheTargetLeadsTo).
	err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
	if errors.Is(err, unix.EINVAL) {
		return nil // not a mount point (any more): already done
	}
	if err != nil {
		return &os.PathError{Op: "unmount", Path: target, Err: err}
	}
	return nil
}

// IsMountPoint implements Mounter.
//
// A symlink at path is no mount point, wherever it leads: mountinfo.Mounted follows it, and a
// recorded target or staging path made a link to another mount (its own mount gone without
// the node RPCs) had that mount unmounted by the teardown (TestUnstageDoesNotUnmountWhatASymlinkAtTheStagingLeadsTo).
func (SystemMounter) IsMountPoint(path string) (bool, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return false, nil
	}
	ok, err := mountinfo.Mounted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return ok, err
}

// Holds implements Mounter, from the mount table: the mounts stacked at path (stackAt), the
// topmost shows the lowest's directory, the same device and the same root in it. The lowest
// is the plugin's bind (the callers checked the path is its staging or target, and it refuses
// to mount on a mount point); a stack is the plugin's bind mounted again, or another file
// system's root, or another directory, mounted over it. The volume's directory is not looked
// at: there again as another directory (made again by hand, restored from a backup, the root
// moved to another disk and the plugin started with --root there) it is not what is mounted,
// and the teardown of what is was refused for good
// (TestTeardownOfAVolumeWhoseDirectoryIsThereAgain,
// TestTeardownAfterTheRootMovedToAnotherDisk). What the lowest shows is, by the table, a
// directory volumes/<id> of its file system (its Root, "//deleted" after it when the directory
// went): a lone mount of anything else (a tmpfs, another directory) was put in the plugin's
// bind's place, unmounted since, and is no more the plugin's to unmount than one over it
// (review26f: a lone mount was taken for the plugin's, and a tmpfs put in its place unmounted,
// its data with it). Nothing at path is read but its mount ID, with AT_STATX_DONT_SYNC: a dead
// hard NFS mount over the target does not block the plugin's lock.
//
// The mount table is read only when path does not show dir itself (by device and inode, both
// looked at with AT_STATX_DONT_SYNC, path not followed): a teardown among a thousand mounts read
// and parsed the whole table twice per release, a claim and release among 1,000 published
// claims taking twice the CPU (BenchmarkClaimAmongPublished/1000).
func (SystemMounter) Holds(path, dir string) (bool, error) {
	if sameFileNoSync(path, dir) {
		return true, nil
	}
	id := filepath.Base(dir)
	stack, err := stackAt(path)
	if err != nil || len(stack) == 0 {
		return err == nil, err
	}
	top, lowest := stack[0], stack[len(stack)-1]
	if !showsVolumeDir(lowest.Root, id) {
		return false, nil
	}
	return top.Major == lowest.Major && top.Minor == lowest.Minor && top.Root == lowest.Root, nil
}

// sameFileNoSync says whether a and b are one file by device and inode, neither followed if a
// symlink, each looked at with AT_STATX_DONT_SYNC (a mount whose NFS server is gone answers from
// its cache instead of blocking); false when either cannot be looked at. (The engine's statx
// helpers are its own: the plugin imports nothing of the engine.)
func sameFileNoSync(a, b string) bool {
	var sa, sb unix.Statx_t
	const flags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_DONT_SYNC
	if unix.Statx(unix.AT_FDCWD, a, flags, unix.STATX_INO, &sa) != nil || unix.Statx(unix.AT_FDCWD, b, flags, unix.STATX_INO, &sb) != nil {
		return false
	}
	return sa.Ino == sb.Ino && sa.Dev_major == sb.Dev_major && sa.Dev_minor == sb.Dev_minor
}

// showsVolumeDir says whether root, a mount's Root in the mount table (the directory of its
// file system it shows), is volume id's directory: volumes/<id>, wherever the plugin's root is
// in that file system, "//deleted" after it when the directory was removed under the mount.
func showsVolumeDir(root, id string) bool {
	root = strings.TrimSuffix(root, "//deleted")
	return filepath.Base(root) == id && filepath.Base(filepath.Dir(root)) == "volumes"
}

// stackAt lists the mounts stacked at path, topmost first, as the mount table has them: the
// one path shows (its mount ID; the one no other mount at path is mounted on where statx does
// not say), then each it is mounted on at path. Only path's parent is resolved (a symlink on
// the way, as the table names the real path); path itself is not followed.
func stackAt(path string) ([]*mountinfo.Info, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	at := filepath.Join(dir, filepath.Base(path))
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return m.Mountpoint != at, false })
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	byID := make(map[int]*mountinfo.Info, len(mounts))
	for _, m := range mounts {
		byID[m.ID] = m
	}
	var top *mountinfo.Info
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, at, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &sx) == nil && sx.Mask&unix.STATX_MNT_ID != 0 {
		top = byID[int(sx.Mnt_id)]
	}
	for _, m := range mounts {
		if top == nil && !slices.ContainsFunc(mounts, func(o *mountinfo.Info) bool { return o.Parent == m.ID }) {
			top = m
		}
	}
	var stack []*mountinfo.Info
	for m := top; m != nil && len(stack) <= len(mounts); m = byID[m.Parent] {
		stack = append(stack, m)
	}
	return stack, nil
}

// topMount names the topmost mount at path as the mount table has it ("tmpfs scratch": the
// file system type and source), or says it is unknown.
func topMount(path string) string {
	if stack, err := stackAt(path); err == nil && len(stack) > 0 {
		return stack[0].FSType + " " + stack[0].Source
	}
	return "a mount the table does not name"
}

// UnmountAll detaches everything mounted at or below dir, deepest first; a path mounted twice
// (stacked) is unmounted twice. A dir that does not exist has nothing mounted. Quickstart's
// cleanup and tests use it so that removing dir never reaches through a mount: it reads the
// mount table again after each round, and fails, naming what is left, unless nothing is
// mounted below dir at the end. A mount hidden by another mounted over a directory above it
// cannot be unmounted by its path (EINVAL, which one round passes over) until the one over it
// is gone, and was left: the caller's removal of dir then reached into it
// (TestQuickstartSweepDoesNotDeleteThroughAHiddenMount).
func UnmountAll(dir string) error {
	resolved, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for round := 0; ; round++ {
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(resolved))
		if err != nil {
			return fmt.Errorf("reading the mount table: %w", err)
		}
		points := make([]string, 0, len(mounts))
		for _, m := range mounts {
			points = append(points, m.Mountpoint)
		}
		if len(points) == 0 {
			return nil
		}
		if round == maxUnmountRounds {
			return fmt.Errorf("still mounted below %s after %d rounds of unmounting: %s", dir, round, strings.Join(points, ", "))
		}
		sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
		var errs []error
		for _, p := range points {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
}

// maxUnmountRounds bounds UnmountAll's rounds: each one reveals at least the mounts hidden one
// level deep under those it detached.
const maxUnmountRounds = 16

// checkNothingMountedIn refuses a directory with a mount point inside it: removing it would
// descend into the mounted filesystem and delete what is there. With shared mount propagation
// (the default on systemd hosts) a mount a consumer makes inside its target shows up inside the
// volume directory too.
//
// The mount table names mount points by their real paths: dir is looked for with its symlinks
// resolved too. Under a root reached through a link (a root moved to another disk and linked
// back, /home -> /var/home), nothing matched, and DeleteVolume removed what a mount inside the
// volume held (TestDeleteRefusesNestedMountUnderASymlinkedRoot).
func checkNothingMountedIn(dir string) error {
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		dirs = append(dirs, real)
	}
	inside := func(m *mountinfo.Info) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return m.Mountpoint == d || strings.HasPrefix(m.Mountpoint, d+"/") })
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return !inside(m), false })
	if err != nil {
		return fmt.Errorf("reading the mount table: %w", err)
	}
	if len(mounts) > 0 {
		return fmt.Errorf("%q is mounted inside the volume's directory; unmount it first", mounts[0].Mountpoint)
	}
	return nil
}

// mountsShowing lists the mount points of the mounts that show dir (the plugin's
// root/volumes/<id>) or a directory below it, wherever they are mounted, sorted: by the mount
// table, read once, each mount of the file system dir is on (the device of the mount its
// parent, volumes/, is on) whose root (the table's Root, "//deleted" after it when the
// directory went) is dir's place in that file system or below it. The recorded staging path
// and targets are not the only places a volume is mounted: a mount moves with the directory
// it is in, and a renamed alloc directory took the staging and the target with it, the records
// leading nowhere (TestDeleteRefusesAVolumeStillMountedWhereItsRecordsNoLongerLead). Where the
// kernel does not say which mount volumes/ is on (statx's STATX_MNT_ID, before 5.8), or the
// table does not have it, a mount showing any volumes/<id> (showsVolumeDir) or a directory
// below one counts, on any device: the IDs are random.
func mountsShowing(dir string) ([]string, error) {
	id := filepath.Base(dir)
	parent := filepath.Dir(dir)
	if real, err := filepath.EvalSymlinks(parent); err == nil {
		parent = real // as the table names it
	}
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	var on *mountinfo.Info
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, parent, unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &sx) == nil && sx.Mask&unix.STATX_MNT_ID != 0 {
		for _, m := range mounts {
			if uint64(m.ID) == sx.Mnt_id {
				on = m
			}
		}
	}
	shows := func(m *mountinfo.Info) bool {
		root := strings.TrimSuffix(m.Root, "//deleted")
		for r := root; r != filepath.Dir(r); r = filepath.Dir(r) {
			if showsVolumeDir(r, id) {
				return true
			}
		}
		return false
	}
	if on != nil {
		if rel, err := filepath.Rel(on.Mountpoint, parent); err == nil && !strings.HasPrefix(rel, "..") {
			in := filepath.Join(strings.TrimSuffix(on.Root, "//deleted"), rel, id) // dir's place in its file system
			shows = func(m *mountinfo.Info) bool {
				return m.Major == on.Major && m.Minor == on.Minor && within(strings.TrimSuffix(m.Root, "//deleted"), in)
			}
		}
	}
	var at []string
	for _, m := range mounts {
		if shows(m) {
			at = append(at, m.Mountpoint)
		}
	}
	slices.Sort(at)
	return at, nil
}

// IsNoMountPrivilege reports whether a Mounter error means this process may not mount
// (EPERM or EACCES: it lacks CAP_SYS_ADMIN).
func IsNoMountPrivilege(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}

// mountStatus turns a Mounter error into the gRPC status the RPC returns: no privileges is
// FAILED_PRECONDITION, so the orchestrator sees a final, explained error rather than a retry.
// Its message says whether the plugin runs as root: root without CAP_SYS_ADMIN (a container
// without --privileged, a user namespace) is not helped by sudo, a user who is not root is
// (internal/csi's hint reads it: TestHostpathWithoutMountPrivilegeSaysWhetherRoot).
func (p *Plugin) mountStatus(rpc string, err error) error {
	if IsNoMountPrivilege(err) {
		who := fmt.Sprintf("the plugin runs as uid %d, not root", p.cfg.Euid())
		if p.cfg.Euid() == 0 {
			who = "the plugin runs as root (uid 0) without CAP_SYS_ADMIN (a container without --privileged, or a user namespace)"
		}
		return status.Errorf(codes.FailedPrecondition, "hostpath: bind-mounting needs root (CAP_SYS_ADMIN); %s: %v", who, err)
	}
	return status.Errorf(codes.Internal, "hostpath: %s: %v", rpc, err)
}

// mountFlagBits are the mount flags a bind mount can honour, applied with a remount.
var mountFlagBits = map[string]uintptr{
	"ro":          unix.MS_RDONLY,
	"nosuid":      unix.MS_NOSUID,
	"nodev":       unix.MS_NODEV,
	"noexec":      unix.MS_NOEXEC,
	"noatime":     unix.MS_NOATIME,
	"nodiratime":  unix.MS_NODIRATIME,
	"relatime":    unix.MS_RELATIME,
	"strictatime": unix.MS_STRICTATIME,
}

// mountFlagDefaults are accepted and change nothing: they name what a bind mount is anyway.
var mountFlagDefaults = map[string]bool{"defaults": true, "rw": true, "bind": true}

// parseMountFlags checks a capability's mount flags and returns their mount(2) bits and a
// canonical spelling used to compare two requests. Unknown flags are refused without echoing
// them, since the CSI spec says mount flags may carry credentials; anything accepted is from the
// fixed list above, so the canonical form is safe to keep in the metadata file.
func parseMountFlags(flags []string) (uintptr, string, error) {
	var bits uintptr
	var names []string
	for i, flag := range flags {
		// Flags joined by commas in one ("noatime,ro") are read as mount(8) reads its -o: an
		// empty item ("noatime,ro,") is nothing, and of "ro" and "rw" the last one given wins
		// (TestCommaJoinedMountFlagsAreReadAsMountReadsThem).
		for f := range strings.SplitSeq(flag, ",") {
			f = strings.TrimSpace(f)
			if f == "" && flag != "" && strings.TrimSpace(flag) != "" {
				continue
			}
			if b, ok := mountFlagBits[f]; ok {
				bits |= b
				names = append(names, f)
				continue
			}
			if f == "rw" {
				bits &^= unix.MS_RDONLY
				names = slices.DeleteFunc(names, func(n string) bool { return n == "ro" })
				continue
			}
			if mountFlagDefaults[f] {
				continue
			}
			return 0, "", fmt.Errorf("mount flag %d of %d is not one a bind mount supports (its value is not shown: mount flags may be sensitive); supported: %s",
				i+1, len(flags), supportedMountFlags())
		}
	}
	slices.Sort(names)
	return bits, strings.Join(slices.Compact(names), ","), nil
}

func supportedMountFlags() string {
	var names []string
	for n := range mountFlagBits {
		names = append(names, n)
	}
	for n := range mountFlagDefaults {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// throughABindOfTheRoot says whether path's parent is on a mount that shows a directory at or
// below root in root's file system: by the mount table's root of that mount (mountinfo's Root, the
// directory of the file system it shows), compared with root's own place in it. The table is
// read only when path's nearest existing directory is on another mount of root's device (its
// mount ID, statx's STATX_MNT_ID, not root's): a claim's targets, on the root's own mount or
// another file system, read nothing. A kernel without STATX_MNT_ID (before 5.8) checks nothing.
func throughABindOfTheRoot(root, path string) (bool, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false, err
	}
	// From the path's parent: a path already mounted (a stage or publish sent again, which
	// answers OK) is on the plugin's own bind of a volume's directory, which this would take
	// for a bind in the root (TestStageAndPublishAgainOnTheSameDeviceAnswerOK). The path's own
	// mount is the callers' to judge (ours, or something else's).
	q := filepath.Dir(path)
	for {
		if _, err := os.Stat(q); err == nil || q == filepath.Dir(q) {
			break
		}
		q = filepath.Dir(q)
	}
	realQ, err := filepath.EvalSymlinks(q)
	if err != nil {
		return false, err
	}
	var rs, qs unix.Statx_t
	const mask = unix.STATX_MNT_ID
	if unix.Statx(unix.AT_FDCWD, realRoot, unix.AT_STATX_DONT_SYNC, mask, &rs) != nil ||
		unix.Statx(unix.AT_FDCWD, realQ, unix.AT_STATX_DONT_SYNC, mask, &qs) != nil ||
		rs.Mask&mask == 0 || qs.Mask&mask == 0 {
		return false, nil
	}
	if rs.Dev_major != qs.Dev_major || rs.Dev_minor != qs.Dev_minor || rs.Mnt_id == qs.Mnt_id {
		return false, nil
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) {
		return uint64(m.ID) != rs.Mnt_id && uint64(m.ID) != qs.Mnt_id, false
	})
	if err != nil {
		return false, err
	}
	var rootIn, qIn string
	for _, m := range mounts {
		// The directory of the file system a path on mount m is.
		in := func(p string) string {
			rel, err := filepath.Rel(m.Mountpoint, p)
			if err != nil {
				return ""
			}
			return filepath.Join(m.Root, rel)
		}
		if uint64(m.ID) == rs.Mnt_id {
			rootIn = in(realRoot)
		}
		if uint64(m.ID) == qs.Mnt_id {
			qIn = in(filepath.Join(realQ, strings.TrimPrefix(path, q)))
		}
	}
	return rootIn != "" && qIn != "" && within(qIn, rootIn), nil
}
