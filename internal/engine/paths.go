package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// Mount layout under the state dir (docs/architecture.md, State on disk): one staging path per volume, as
// the CSI spec requires, and one publish target per claim named by its usage, as Nomad does.
const (
	stagingDir = "staging" // internal/store checkMountsWithoutDatabase knows these two names
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
	return l.withDirs(ctx, false, func(func() bool) error {
		p, err := openNoFollow(filepath.Dir(l.dir), path, createDirs)
		if err != nil {
			return err
		}
		p.close()
		return nil
	})
}

// makeTargetParent is makeDirs for the parent of a claim's publish target, and also refuses
// the target itself when it is a symlink: the plugin makes the target and mounts on it, and
// would follow one. The target is looked up from the parent's descriptor the walk opened, not
// by walking the path again. It adds the target's alloc to the volume's list in the target
// index (indexTarget) under the same hold of the directory lock, before anything can be
// mounted there.
func (l *locker) makeTargetParent(ctx context.Context, target string) error {
	target = filepath.Clean(target)
	return l.withDirs(ctx, false, func(func() bool) error {
		p, err := openNoFollow(filepath.Dir(l.dir), filepath.Dir(target), createDirs)
		if err != nil {
			return err
		}
		defer p.close()
		if err := l.indexTarget(target); err != nil {
			return err
		}
		fd, err := openComponent(p.fd, filepath.Base(target))
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil // the plugin makes it
		case errors.Is(err, unix.ELOOP):
			// The target is volctl's own path, no one's to choose: say what the link is and that
			// removing it (not what it points to) is the remedy.
			what := "it was left there by a plugin or by hand"
			buf := make([]byte, unix.PathMax)
			if n, err := unix.Readlinkat(p.fd, filepath.Base(target), buf); err == nil {
				what = fmt.Sprintf("it points to %q, left there by a plugin or by hand", buf[:n])
			}
			return &symlinkError{Path: target, Component: target, Context: "claim target",
				Advice: fmt.Sprintf("%s: remove the link with `rm %s`, which leaves what it points to, and claim again", what, target)}
		case err != nil:
			return &os.PathError{Op: "open", Path: target, Err: err}
		}
		return unix.Close(fd)
	})
}

// removeTargetLink removes a symlink at a claim's target, never following it: the link alone is
// unlinked, through its parent's descriptor, the parent opened without following any component
// below the state dir. It is for a plugin that answered NodeUnpublishVolume OK and left a link
// there: left, it would refuse every later claim at that target (makeTargetParent). It returns
// where the link pointed and true when it removed one; nothing is done when the target is
// missing or not a symlink, or its parent is missing or reached through a symlink (which the
// publish path refuses, naming it).
func (l *locker) removeTargetLink(ctx context.Context, target string) (string, bool, error) {
	if fi, err := os.Lstat(target); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return "", false, nil // the usual case, gone, costs no lock (the walk below decides)
	}
	target = filepath.Clean(target)
	var pointed string
	var removed bool
	err := l.withDirs(ctx, true, func(lost func() bool) error {
		p, err := openNoFollow(filepath.Dir(l.dir), filepath.Dir(target), createNothing)
		var se *symlinkError
		if errors.Is(err, fs.ErrNotExist) || errors.As(err, &se) {
			return nil
		}
		if err != nil {
			return err
		}
		defer p.close()
		name := filepath.Base(target)
		var st unix.Stat_t
		if err := unix.Fstatat(p.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return nil
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(p.fd, name, buf)
		if err != nil {
			n = 0
		}
		if lost() {
			return errDirsLost
		}
		if err := unix.Unlinkat(p.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "remove the symlink", Path: target, Err: err}
		}
		pointed, removed = string(buf[:n]), true
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return pointed, removed, nil
}

// linkAbove returns the symlinkError of a directory on the way to path, one of volctl's own
// below the state dir (a claim's target, a volume's staging path), found by walking it without
// following any component; nil when there is none, when a component is missing (nothing there
// for a plugin to follow) or when path is not below the state dir.
func (l *locker) linkAbove(path string) error {
	root := filepath.Dir(l.dir)
	if rel, err := filepath.Rel(root, path); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	p, err := openNoFollow(root, filepath.Dir(path), createNothing)
	var se *symlinkError
	if errors.As(err, &se) {
		return se
	}
	if err == nil {
		p.close()
	}
	return nil
}

// removeEmptyDirs removes path and then its parents while they are empty, stopping at root,
// holding the directory lock alone (see makeDirs). A directory that is still a mount point is
// not empty to rmdir (EBUSY), so a live mount is never removed from under its user. It is
// tidying: when the lock cannot be had (the context ended), the directories stay, empty.
func (l *locker) removeEmptyDirs(ctx context.Context, path, root string) {
	_ = l.withDirs(ctx, true, func(lost func() bool) error {
		if lost() {
			return errDirsLost
		}
		_ = removeEmptyChain(root, path)
		return nil
	})
}

// removeStagingDir removes a volume's staging directory, which is kept while the volume is
// registered (docs/architecture.md, State on disk), and its plugin's directory if that is left
// empty: called once the volume is deleted or deregistered, under its volume lock. With
// volumeID "", it removes the plugin's directory alone, if empty (the plugin deregistered). A
// directory still mounted (EBUSY) or not empty stays. The volume's list in the target index
// goes too, unless a directory it names is still there (dropTargetList).
func (e *Engine) removeStagingDir(ctx context.Context, pluginID, volumeID string) {
	root := filepath.Join(e.cfg.StateDir, stagingDir)
	path := filepath.Join(root, pluginID)
	if volumeID != "" {
		path = stagingPath(e.cfg.StateDir, pluginID, volumeID)
		e.dropTargetList(volumeID)
	}
	e.locks.removeEmptyDirs(ctx, path, root)
}

// removeEmptyChain removes path and then its parents while they are empty, stopping below root.
// The path is walked once, from root's parent (the state dir, trusted) down, each component
// opened without following a symlink (nofollow.go), and each directory is removed through its
// parent's descriptor, deepest first: a link planted in place of one of them (root included)
// stops the walk and nothing is removed, so root never removes a directory elsewhere. Missing
// components are skipped; the first directory that cannot be removed (not empty, a mount
// point: EBUSY) ends it.
func removeEmptyChain(root, path string) error {
	for _, p := range []*string{&root, &path} {
		abs, err := filepath.Abs(*p) // cleans it too
		if err != nil {
			return err
		}
		*p = abs
	}
	if rel, err := filepath.Rel(root, path); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil // nothing below root
	}
	walkRoot := filepath.Dir(root)
	rel, err := filepath.Rel(walkRoot, path)
	if err != nil {
		return err
	}
	names := strings.Split(rel, "/") // names[0] is root's own name
	top, err := unix.Open(walkRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: walkRoot, Err: err}
	}
	dirs := []int{top} // dirs[i] holds names[i]
	defer func() {
		for _, fd := range dirs {
			_ = unix.Close(fd)
		}
	}()
	for _, name := range names[:len(names)-1] {
		fd, err := openComponent(dirs[len(dirs)-1], name)
		if errors.Is(err, unix.ENOENT) {
			break // nothing deeper exists
		}
		if err != nil {
			return err // a symlink (ELOOP), or not a directory
		}
		dirs = append(dirs, fd)
	}
	for i := len(dirs) - 1; i >= 1; i-- {
		if err := unix.Unlinkat(dirs[i], names[i], unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// mountFree reports, without reading the mount table, that nothing is mounted at path or below
// it: path is gone, or it is a directory (not a symlink) that is not the root of a mount
// (statx's STATX_ATTR_MOUNT_ROOT, Linux 5.8 and later) and has no entries, so no mount point
// can be below it either. false means it cannot tell (a mount root, entries, a symlink, a
// kernel without the attribute): the caller reads the mount table. The directory is opened
// once and both checks are made on that descriptor, so they speak of the same directory.
func mountFree(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if root, known := isMountRoot(fd, ""); !known || root {
		return false
	}
	var buf [512]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err != nil {
			return false
		}
		if n <= 0 {
			return true // only "." and ".." (which ParseDirent leaves out) were there
		}
		if _, count, _ := unix.ParseDirent(buf[:n], 1, nil); count > 0 {
			return false
		}
	}
}

// isMountRoot says whether the file name names, relative to the directory descriptor dirfd (the
// file itself when name is ""), is the root of a mount (statx's STATX_ATTR_MOUNT_ROOT), never
// following a symlink; known is false when the kernel does not say (before Linux 5.8) or it
// cannot be read. A name that is gone is no mount root (known).
func isMountRoot(dirfd int, name string) (root, known bool) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var stx unix.Statx_t
	err := unix.Statx(dirfd, name, flags, unix.STATX_TYPE, &stx)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false, true
	case err != nil || stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0:
		return false, false
	}
	return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, true
}
