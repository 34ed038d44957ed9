package engine

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// MountTable answers which paths under the state dir are mount points. Reconcile reads it once
// per pass, not once per claim, so restoring 1,000 claims costs one read of the kernel's table;
// the publish path asks about its one target (Mounted), which reads no table at all, and about
// what is below it (belowFinder: listmount(2), or before Linux 6.8 a read of the table).
type MountTable interface {
	// MountsUnder returns every mount point at or below dir.
	MountsUnder(dir string) (map[string]bool, error)
	// Mounted reports whether path, below root (the state dir), is a mount point: the root of
	// another mount than its parent directory's; and, when it is, whether that mount is
	// read-only. path is opened without following a symlink in any component below root
	// (nofollow.go).
	Mounted(root, path string) (MountPoint, error)
}

// MountPoint is what MountTable.Mounted finds at a path.
type MountPoint struct {
	// Mounted: the path is the root of another mount than its parent directory's.
	Mounted bool
	// ReadOnly: that mount refuses writes to the files and directories on it (statfs's
	// ST_RDONLY: the mount's flag or its file system's). False when not Mounted.
	ReadOnly bool
}

// tableMounts is a MountTable that can also answer Mounted from the kernel's table alone,
// asking nothing of the file system mounted there. Reconcile (and a claim asked again) check a
// target that was mounted long ago so (mountedByTable): statfs of a mount whose server is gone
// (a hard NFS mount) blocks, for good, and the pass with it, holding the volume's lock. A
// target just published is asked with Mounted, which also tells a bind of the bare staging
// directory apart.
type tableMounts interface {
	// MountedInTable is Mounted read from the mount table: path (as the table spells it,
	// symlinks resolved) is a mount point when the table lists a mount there, read-only when
	// the topmost one is, by its own flags or its file system's.
	MountedInTable(path string) (MountPoint, error)
}

// stackCounter is a MountTable that can say how many mounts are stacked at each of a few paths.
type stackCounter interface {
	// StackedMounts returns how many mounts the table lists at each of paths (as the table
	// spells them): more than one are stacked, the topmost last.
	StackedMounts(paths []string) (map[string]int, error)
}

// belowFinder is a MountTable that can say whether anything is mounted below a mount point
// without reading the whole table.
type belowFinder interface {
	// MountBelow names a mount point strictly below path (a mount point), "" when none.
	MountBelow(path string) (string, error)
}

// stackReader is a MountTable that can list the mounts stacked at one path, in the order made.
type stackReader interface {
	// StackAt returns what each mount at path shows (as the table spells path), the topmost
	// last; none when path is no mount point.
	StackAt(path string) ([]mountRoot, error)
}

// kernelMounts reads the kernel's mount table (/proc/self/mountinfo).
type kernelMounts struct{}

// StackAt implements stackReader from the table.
func (kernelMounts) StackAt(path string) ([]mountRoot, error) {
	path = filepath.Clean(path)
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return m.Mountpoint != path, false })
	if err != nil {
		return nil, store.MountTableUnreadable(err)
	}
	mounts = chainAt(path, mounts)
	out := make([]mountRoot, len(mounts))
	for i, m := range mounts {
		out[i] = mountRoot{dev: unix.Mkdev(uint32(m.Major), uint32(m.Minor)), root: m.Root}
	}
	return out, nil
}

// chainAt is the stack of mounts at path, ms being every mount the table lists there, from the
// bottom up: the mount path leads to (its ID read with statx) and those it was mounted on at the
// same point, down its parents. The table lists mounts in the order made, and a mount moved over
// the path keeps its place there, so the last listed is not the topmost
// (TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverMovedOverTheTarget,
// TestCoverMovedOverATargetIsSaidStackedOnceNotReplaced); and a propagation copy of a mount
// there, hidden, is no layer of what the path shows
// (TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverBesideAPropagationCopy). Where the ID
// cannot be read, or names none of ms, the table's order.
func chainAt(path string, ms []*mountinfo.Info) []*mountinfo.Info {
	if len(ms) < 2 {
		return ms
	}
	id, known := pathMountID(path)
	if !known {
		return ms
	}
	byID := make(map[int]*mountinfo.Info, len(ms))
	for _, m := range ms {
		byID[m.ID] = m
	}
	top := byID[int(id)]
	if top == nil {
		return ms
	}
	chain := []*mountinfo.Info{top}
	for m := byID[top.Parent]; m != nil && len(chain) < len(ms); m = byID[m.Parent] {
		chain = append(chain, m)
	}
	slices.Reverse(chain)
	return chain
}

// parentReader is what a table says of the topmost mount at a path: the mount point of the mount
// it was mounted on.
type parentReader interface {
	// TopParentAt returns the mount point of the parent of the topmost mount at path (as the
	// table spells path); "" when path is no mount point.
	TopParentAt(path string) (string, error)
}

// TopParentAt implements parentReader from one read of the table, the topmost mount at path
// known by the ID of the mount path leads to (statx): the table lists mounts in the order made,
// and a mount moved over the path (mount --move) keeps its place in it, so the last listed at a
// path is not the topmost (TestForcedDetachLeavesAHandsCoverMovedOverATargetInsideAMountOverItsPublishDirectory).
// Where the ID cannot be read, the last listed.
func (kernelMounts) TopParentAt(path string) (string, error) {
	path = filepath.Clean(path)
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return "", store.MountTableUnreadable(err)
	}
	id, known := pathMountID(path)
	var top *mountinfo.Info
	byID := make(map[int]*mountinfo.Info, len(mounts))
	for _, m := range mounts {
		byID[m.ID] = m
		if m.Mountpoint == path && (!known || uint64(m.ID) == id) {
			top = m
		}
	}
	if top == nil {
		return "", nil
	}
	if parent := byID[top.Parent]; parent != nil {
		return parent.Mountpoint, nil
	}
	return "", nil
}

// MountBelow implements belowFinder: from listmount(2) where the kernel has it, else from one
// read of the table.
func (k kernelMounts) MountBelow(path string) (string, error) {
	if below, ok := mountBelowByListmount(path); ok {
		return below, nil
	}
	under, err := k.MountsUnder(path)
	return firstBelow(under, path), err
}

// firstBelow is the first, in order, of the mount points in under strictly below path.
func firstBelow(under map[string]bool, path string) string {
	var out []string
	for m := range under {
		if m != filepath.Clean(path) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

func (kernelMounts) MountedInTable(path string) (MountPoint, error) {
	path = filepath.Clean(path)
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return m.Mountpoint != path, false })
	if err != nil {
		return MountPoint{}, store.MountTableUnreadable(err)
	}
	if len(mounts) == 0 {
		return MountPoint{}, nil
	}
	top := shownFromParent(path, mounts)
	return MountPoint{Mounted: true, ReadOnly: hasOption(top.Options, "ro") || hasOption(top.VFSOptions, "ro")}, nil
}

// shownFromParent is the mount path shows of ms, every mount the table lists there: the one
// mounted on the mount path's directory leads to (its ID read with statx of the directory, not
// of path, whose file system MountedInTable must not ask), then those stacked on it, up to the
// top. A publish directory that is a shared mount bound over itself (the kubelet idiom) has a
// hidden propagation copy of each target's mount listed there too, last, and its flags were
// read as the target's: a read claim's target remounted read-only called writable for the
// copy, and one remounted writable called read-only
// (TestReadOnlyReadClaimBesideAPropagationCopyIsNotCalledWritable,
// TestReadClaimRemountedWritableBesideAPropagationCopyIsReported). Where the directory's mount
// cannot be read or carries none of ms, the last listed (the table lists mounts in the order made).
func shownFromParent(path string, ms []*mountinfo.Info) *mountinfo.Info {
	last := ms[len(ms)-1]
	if len(ms) < 2 {
		return last
	}
	parent, known := pathMountID(filepath.Dir(path))
	if !known {
		return last
	}
	on := func(id int) *mountinfo.Info {
		for _, m := range ms {
			if m.Parent == id {
				return m
			}
		}
		return nil
	}
	top := on(int(parent))
	if top == nil {
		return last
	}
	for range ms {
		next := on(top.ID)
		if next == nil {
			break
		}
		top = next
	}
	return top
}

// hasOption reports whether the comma-separated mount options opts hold opt.
func hasOption(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func (kernelMounts) MountsUnder(dir string) (map[string]bool, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return nil, store.MountTableUnreadable(err)
	}
	out := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		out[m.Mountpoint] = true
	}
	return out, nil
}

func (kernelMounts) StackedMounts(paths []string) (map[string]int, error) {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return !slices.Contains(paths, m.Mountpoint), false })
	if err != nil {
		return nil, store.MountTableUnreadable(err)
	}
	// The layers of what each path shows (chainAt): a hidden propagation copy counted, the advice
	// asked for one umount more than there was a mount to take
	// (TestAMountLeftBesideAPropagationCopySaysUnmountItOnce).
	at := map[string][]*mountinfo.Info{}
	for _, m := range mounts {
		at[m.Mountpoint] = append(at[m.Mountpoint], m)
	}
	out := make(map[string]int, len(at))
	for point, ms := range at {
		out[point] = len(chainAt(point, ms))
	}
	return out, nil
}

// MountRoots answers for the mounts at paths (mountRoots) from statmount(2) where the kernel
// has it, a statx and a statmount a path (mountRootsByStatmount), and else from one read of the
// kernel's table, whose size grows with every claim on the host.
func (kernelMounts) MountRoots(paths ...string) (map[string]mountRoot, error) {
	if out, ok := mountRootsByStatmount(paths); ok {
		return out, nil
	}
	return mountRootsFromTable(paths)
}

// mountRootsFromTable is MountRoots read from the kernel's table.
func mountRootsFromTable(paths []string) (map[string]mountRoot, error) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[filepath.Clean(p)] = true
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return !want[m.Mountpoint], false })
	if err != nil {
		return nil, store.MountTableUnreadable(err)
	}
	at := map[string][]*mountinfo.Info{}
	for _, m := range mounts {
		at[m.Mountpoint] = append(at[m.Mountpoint], m)
	}
	out := make(map[string]mountRoot, len(at))
	for point, ms := range at {
		ms = chainAt(point, ms)
		top := ms[len(ms)-1]
		out[point] = mountRoot{dev: unix.Mkdev(uint32(top.Major), uint32(top.Minor)), root: top.Root}
	}
	return out, nil
}

// Mounted compares the mount ID of path with its parent's (statx STATX_MNT_ID), both opened
// without following symlinks, and asks statfs of a mount point whether it is read-only: one
// path, three system calls, no read of the table.
func (kernelMounts) Mounted(root, path string) (MountPoint, error) {
	t, err := openNoFollow(root, path, createNothing)
	if err != nil {
		return MountPoint{}, err
	}
	defer t.close()
	mounted, err := t.mounted()
	if err != nil || !mounted {
		return MountPoint{}, err
	}
	ro, err := t.readOnly()
	return MountPoint{Mounted: true, ReadOnly: ro}, err
}
