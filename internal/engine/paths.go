package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// Mount layout under the state dir (docs/architecture.md, State on disk): one staging path per volume, as
// the CSI spec requires, and one publish target per claim named by its usage, as Nomad does.
const (
	stagingDir = "staging"
	publishDir = "publish"
)

// stagingPath is where a volume is node-staged: <state>/staging/<plugin>/<volume>.
func stagingPath(stateDir, pluginID, volumeID string) string {
	return filepath.Join(stateDir, stagingDir, pluginID, volumeID)
}

// publishPath is a claim's NodePublishVolume target:
// <state>/publish/<alloc>/<volume>/<ro|rw>-<attachment>-<access>.
func publishPath(stateDir, alloc, volumeID string, readOnly bool, att spec.AttachmentMode, acc spec.AccessMode) string {
	return filepath.Join(stateDir, publishDir, alloc, volumeID, usageName(readOnly, att, acc))
}

func usageName(readOnly bool, att spec.AttachmentMode, acc spec.AccessMode) string {
	rw := "rw"
	if readOnly {
		rw = "ro"
	}
	return rw + "-" + string(att) + "-" + string(acc)
}

// makeDirs is os.MkdirAll for the directories under the state dir that a release removes again
// when they are empty (removeEmptyDirs). Some are shared: staging/<plugin> by the volumes of a
// plugin, publish/<alloc> by the claims of an alloc on several volumes, and the volume locks do
// not serialize those. Without the directory lock, another process could remove a level
// MkdirAll has just made (still empty) before MkdirAll makes the next one inside it, and the
// claim would fail with ENOENT. Makers share the lock; once the deepest level exists, every
// shared level above it is non-empty and safe. Below the state dir, no component is followed
// through a symlink (nofollow.go): one planted there is refused, naming it, before anything is
// made or mounted where it points.
func (l *locker) makeDirs(ctx context.Context, path string) error {
	unlock, err := l.dirs(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	p, err := openNoFollow(filepath.Dir(l.dir), path, createDirs)
	if err != nil {
		return err
	}
	p.close()
	return nil
}

// makeTargetParent is makeDirs for the parent of a claim's publish target, and also refuses
// the target itself when it is a symlink: the plugin makes the target and mounts on it, and
// would follow one.
func (l *locker) makeTargetParent(ctx context.Context, target string) error {
	if err := l.makeDirs(ctx, filepath.Dir(target)); err != nil {
		return err
	}
	p, err := openNoFollow(filepath.Dir(l.dir), target, createNothing)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the plugin makes it
	}
	if err != nil {
		return err
	}
	p.close()
	return nil
}

// removeEmptyDirs removes path and then its parents while they are empty, stopping at root,
// holding the directory lock alone (see makeDirs). A directory that is still a mount point is
// not empty to rmdir (EBUSY), so a live mount is never removed from under its user. It is
// tidying: when the lock cannot be had (the context ended), the directories stay, empty.
func (l *locker) removeEmptyDirs(ctx context.Context, path, root string) {
	unlock, err := l.dirs(ctx, true)
	if err != nil {
		return
	}
	defer unlock()
	for p := path; p != root && len(p) > len(root); p = filepath.Dir(p) {
		if err := removeEmptyDir(filepath.Dir(root), p); err != nil && !os.IsNotExist(err) {
			return
		}
	}
}

// removeEmptyDir removes the empty directory path below root through its parent's descriptor,
// reached without following a symlink (nofollow.go): a link planted in place of one of its
// parents must not make root remove a directory elsewhere. A symlink is an error.
func removeEmptyDir(root, path string) error {
	d, err := openNoFollow(root, path, createNothing)
	if err != nil {
		return err
	}
	defer d.close()
	if d.parent < 0 {
		return fmt.Errorf("%s: will not remove the walk's root", path)
	}
	return unix.Unlinkat(d.parent, d.name, unix.AT_REMOVEDIR)
}
