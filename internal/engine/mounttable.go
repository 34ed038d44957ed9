package engine

import (
	"fmt"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
)

// MountTable answers which paths under the state dir are mount points. Reconcile reads it once
// per pass, not once per claim, so restoring 1,000 claims costs one read of the kernel's table;
// the publish path asks about its one target (Mounted), which reads no table at all.
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

// kernelMounts reads the kernel's mount table (/proc/self/mountinfo).
type kernelMounts struct{}

func (kernelMounts) MountsUnder(dir string) (map[string]bool, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	out := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		out[m.Mountpoint] = true
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
