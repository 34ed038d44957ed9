package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// Paths that volctl mounts on or creates as root are resolved without following symlinks: a
// group's volume_mount destinations from "/" down, and the staging and publish paths below the
// state dir. Anyone who can write a directory on such a path could otherwise plant a symlink in
// it and have root's bind mount (or mkdir) land where the link points, /etc say. The walk opens
// one component at a time relative to the directory before it (openat2 with
// RESOLVE_NO_SYMLINKS, or O_PATH|O_NOFOLLOW and a check of what was opened where openat2 is
// missing), and the mount is then made on the file descriptor of the checked path, so that
// nothing swapped in afterwards changes where it lands.

// symlinkError is a path volctl refused because one of its components is a symlink.
type symlinkError struct {
	Path      string // the path asked for
	Component string // the leading part of Path that is a symlink
	// Context, when set, is said instead of Path ("volume_mount /srv/data").
	Context string
	// Advice, when set, replaces the general advice (a path of volctl's own, which no one can
	// "use instead").
	Advice string
	// Own: Component is below volctl's state dir (the walk's root was the state dir), a
	// directory of volctl's own that no one chooses, so the advice without Advice is to remove
	// the link, never to use the path it points to.
	Own bool
}

func (e *symlinkError) Error() string {
	what := e.Context
	if what == "" {
		what = e.Path
	}
	advice := e.Advice
	switch {
	case advice != "":
	case e.Own:
		advice = fmt.Sprintf("it is volctl's own, under its state dir, replaced by hand or by a program: remove the link with `rm %s`, which leaves what it points to, "+
			"then run the command again", e.Component)
	default:
		advice = "replace it with a real directory, or use the path it points to"
	}
	return fmt.Sprintf("%s: %s is a symlink, and volctl does not follow symlinks in mount paths (%s)", what, e.Component, advice)
}

// create says what a walk makes of the components that do not exist yet.
type create int

const (
	createNothing create = iota // a missing component is an error (ENOENT)
	createDirs                  // every missing component becomes a directory (0750)
	createFile                  // missing parents become directories, the last an empty file (0640)
)

// noOpenat2 is set once openat2 turned out to be missing (ENOSYS, Linux before 5.6); the walk
// then opens each component with O_PATH|O_NOFOLLOW. Tests set it to exercise that fallback.
var noOpenat2 atomic.Bool

// pathFD is an opened path: fd is an O_PATH descriptor of its last component, parent one of the
// directory that holds it (the walk's root when the path is the root itself: then name is "").
type pathFD struct {
	root   string // where the walk began, trusted (openNoFollow)
	path   string
	fd     int
	parent int
	name   string
}

func (p *pathFD) close() {
	if p.fd >= 0 {
		_ = unix.Close(p.fd)
	}
	if p.parent >= 0 && p.parent != p.fd {
		_ = unix.Close(p.parent)
	}
	p.fd, p.parent = -1, -1
}

// procPath is the /proc path through which the kernel resolves an open file descriptor to the
// very file it refers to, wherever that has been moved since.
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// openNoFollow opens path, which must be root or below it, without following a symlink in any
// component below root (root itself is trusted: "/", or the state dir the administrator chose),
// creating what is missing as mode says. The error for a symlink is a *symlinkError naming it.
func openNoFollow(root, path string, mode create) (*pathFD, error) {
	for _, p := range []*string{&root, &path} {
		abs, err := filepath.Abs(*p) // cleans it too
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s: not under %s", path, root)
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	p := &pathFD{root: root, path: path, fd: fd, parent: -1}
	if rel == "." {
		return p, nil
	}
	names := strings.Split(rel, "/")
	done := root
	for i, name := range names {
		last := i == len(names)-1
		done = filepath.Join(done, name)
		if err := makeComponent(p.fd, name, mode, last); err != nil {
			p.close()
			return nil, store.NoSpace(&os.PathError{Op: "create", Path: done, Err: err})
		}
		next, err := openComponent(p.fd, name)
		if errors.Is(err, unix.ELOOP) {
			p.close()
			return nil, &symlinkError{Path: path, Component: done, Own: root != "/"}
		}
		if err != nil {
			p.close()
			return nil, &os.PathError{Op: "open", Path: done, Err: err}
		}
		if p.parent >= 0 {
			_ = unix.Close(p.parent)
		}
		p.parent, p.fd, p.name = p.fd, next, name
	}
	return p, nil
}

// makeComponent creates name in dir when mode asks for it; one that exists is left as it is
// (the open that follows refuses it if it is a symlink).
func makeComponent(dir int, name string, mode create, last bool) error {
	switch {
	case mode == createNothing:
		return nil
	case mode == createFile && last:
		fd, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0o640)
		if err == nil {
			return unix.Close(fd)
		}
		if errors.Is(err, unix.EEXIST) {
			return nil
		}
		return err
	}
	if err := unix.Mkdirat(dir, name, 0o750); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// openComponent opens one name in dir as O_PATH without following it: ELOOP when it is a
// symlink.
func openComponent(dir int, name string) (int, error) {
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	// O_PATH|O_NOFOLLOW opens a symlink itself rather than failing: look at what was opened.
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		_ = unix.Close(fd)
		return -1, unix.ELOOP
	}
	return fd, nil
}

// isDir reports whether the opened path is a directory.
func (p *pathFD) isDir() (bool, error) {
	ft, err := p.fileType()
	return ft == unix.S_IFDIR, err
}

// fileType is the type bits (unix.S_IFMT) of the opened path's mode.
func (p *pathFD) fileType() (uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstat(p.fd, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: p.path, Err: err}
	}
	return st.Mode & unix.S_IFMT, nil
}

// hidden says what a mount on the opened path would hide from every path to it: "" when
// nothing (an empty file, a directory holding nothing but empty directories, which volctl
// itself may have made there: a nested volume_mount's destination walked before its outer one
// was bound), else a file's size, a device's, pipe's or socket's kind (/dev/null), or up to
// three of the files (anything but a directory) below a directory, by path from it, in name
// order. The walk reads no further than hiddenBudget entries: a tree of more, none of them a
// file, is named by that.
func (p *pathFD) hidden() (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(p.fd, &st); err != nil {
		return "", &os.PathError{Op: "stat", Path: p.path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Size == 0 {
			return "", nil
		}
		return fmt.Sprintf("a file of %d bytes", st.Size), nil
	case unix.S_IFDIR:
	case unix.S_IFBLK:
		return "a block device", nil
	case unix.S_IFCHR:
		return "a character device", nil
	case unix.S_IFIFO:
		return "a named pipe", nil
	case unix.S_IFSOCK:
		return "a socket", nil
	default:
		return "", nil
	}
	fd, err := unix.Openat(p.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: p.path, Err: err}
	}
	const shown = 3
	var files []string
	budget := hiddenBudget
	var walk func(fd int, rel string) error
	walk = func(fd int, rel string) error {
		dir := os.NewFile(uintptr(fd), filepath.Join(p.path, rel))
		defer dir.Close()
		var names []string
		for budget > 0 {
			batch, err := dir.Readdirnames(min(budget, 256))
			names = append(names, batch...)
			budget -= len(batch)
			if errors.Is(err, io.EOF) || len(batch) == 0 {
				break
			}
			if err != nil {
				return err
			}
		}
		slices.Sort(names)
		for _, name := range names {
			if len(files) > shown {
				return nil
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return &os.PathError{Op: "stat", Path: filepath.Join(dir.Name(), name), Err: err}
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				files = append(files, filepath.Join(rel, name))
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return &os.PathError{Op: "open", Path: filepath.Join(dir.Name(), name), Err: err}
			}
			if err := walk(sub, filepath.Join(rel, name)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(fd, ""); err != nil {
		return "", err
	}
	switch {
	case len(files) == 0 && budget > 0:
		return "", nil
	case len(files) == 0:
		return fmt.Sprintf("a directory of more than %d directories", hiddenBudget), nil
	}
	quoted := make([]string, 0, shown+1)
	for _, f := range files[:min(len(files), shown)] {
		quoted = append(quoted, strconv.Quote(f))
	}
	if len(files) > shown || budget == 0 {
		quoted = append(quoted, "more")
	}
	if len(quoted) == 1 {
		return "a directory holding " + quoted[0], nil
	}
	return "a directory holding " + strings.Join(quoted[:len(quoted)-1], ", ") + " and " + quoted[len(quoted)-1], nil
}

// hiddenBudget bounds the entries hidden reads below a destination.
const hiddenBudget = 10000

// blockDevice says whether the opened path is a block device file, and which device (its rdev).
func (p *pathFD) blockDevice() (rdev uint64, block bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(p.fd, &st); err != nil {
		return 0, false, &os.PathError{Op: "stat", Path: p.path, Err: err}
	}
	return st.Rdev, st.Mode&unix.S_IFMT == unix.S_IFBLK, nil
}

// mounted reports whether the opened path is a mount point: opening it crossed into another
// mount than its parent directory's.
func (p *pathFD) mounted() (bool, error) {
	if p.parent < 0 {
		return false, fmt.Errorf("%s: cannot tell whether it is a mount point", p.path)
	}
	mine, err := mountID(p.fd)
	if err != nil {
		return false, &os.PathError{Op: "mount id of", Path: p.path, Err: err}
	}
	theirs, err := mountID(p.parent)
	if err != nil {
		return false, &os.PathError{Op: "mount id of", Path: filepath.Dir(p.path), Err: err}
	}
	return mine != theirs, nil
}

// sameFile reports whether the opened paths are one file (device and inode): a bind mount's
// root is the file it was made of.
func (p *pathFD) sameFile(q *pathFD) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(p.fd, &a); err != nil {
		return false, &os.PathError{Op: "stat", Path: p.path, Err: err}
	}
	if err := unix.Fstat(q.fd, &b); err != nil {
		return false, &os.PathError{Op: "stat", Path: q.path, Err: err}
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// findBelow looks for the directory id below the opened directory p, on its device alone (no
// symlink followed, no mount entered: a mount's root, which statx says is one, is neither what
// is looked for nor walked, as a bind mount's root keeps the device and inode of the directory
// it was made of), reading no more than hiddenBudget entries: its path from p, and
// whether it was found (bareStaging: a target bound from a directory a plugin made below a
// staging path it mounted nothing on).
func (p *pathFD) findBelow(id fileID) (string, bool, error) {
	fd, err := unix.Openat(p.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false, &os.PathError{Op: "open", Path: p.path, Err: err}
	}
	budget := hiddenBudget
	var walk func(fd int, rel string) (string, bool, error)
	walk = func(fd int, rel string) (string, bool, error) {
		dir := os.NewFile(uintptr(fd), filepath.Join(p.path, rel))
		defer dir.Close()
		for budget > 0 {
			names, err := dir.Readdirnames(min(budget, 256))
			budget -= len(names)
			for _, name := range names {
				var sx unix.Statx_t
				if unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &sx) != nil ||
					statxID(&sx).dev != id.dev ||
					sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
					// A mount's root is not below the bare staging: a plugin that staged into
					// <staging>/globalmount, bound from its own directory on the same disk, did
					// stage (TestTargetBoundFromAMountBelowTheStagingPathIsTaken). Before Linux
					// 5.8, which does not say, a bind from the same disk is walked as below.
					continue
				}
				if kind := uint32(sx.Mode) & unix.S_IFMT; statxID(&sx) == id && (kind == unix.S_IFDIR || kind == unix.S_IFREG) {
					// A directory, or a regular file: a block target bound from the file a block
					// plugin made below a bare staging is the host's disk too (it matched
					// directories alone: TestBlockTargetBoundFromAFileBelowABareStagingIsRefused).
					// A device node there is a device's, not the disk's: a bind of it is the
					// device (TestBlockTargetBoundFromADeviceNodeBelowABareStagingIsTaken).
					return filepath.Join(rel, name), true, nil
				}
				if uint32(sx.Mode)&unix.S_IFMT != unix.S_IFDIR {
					continue // only directories are walked into
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue // removed meanwhile, or not readable: nothing to find there
				}
				if found, ok, err := walk(sub, filepath.Join(rel, name)); ok || err != nil {
					return found, ok, err
				}
			}
			if errors.Is(err, io.EOF) || len(names) == 0 {
				break
			}
			if err != nil {
				return "", false, &os.PathError{Op: "readdir", Path: filepath.Join(p.path, rel), Err: err}
			}
		}
		return "", false, nil
	}
	return walk(fd, "")
}

// fileID is a file's device and inode: a bind mount's root has the file's it was made of.
type fileID struct{ dev, ino uint64 }

// id is the opened path's fileID, asked without syncing with the file system (statx
// AT_STATX_DONT_SYNC: a hard NFS mount whose server is gone does not block it; the device and
// inode are the kernel's own).
func (p *pathFD) id() (fileID, error) {
	var sx unix.Statx_t
	if err := unix.Statx(p.fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &sx); err != nil {
		return fileID{}, &os.PathError{Op: "stat", Path: p.path, Err: err}
	}
	return statxID(&sx), nil
}

// born is when the opened file was made: its birth time (statx's STATX_BTIME), or, on a file
// system that keeps none, its last change (ctime, never earlier than its birth), asked without
// syncing with the file system (as id).
func (p *pathFD) born() (time.Time, error) {
	var sx unix.Statx_t
	if err := unix.Statx(p.fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BTIME|unix.STATX_CTIME, &sx); err != nil {
		return time.Time{}, &os.PathError{Op: "stat", Path: p.path, Err: err}
	}
	ts := sx.Ctime
	if sx.Mask&unix.STATX_BTIME != 0 {
		ts = sx.Btime
	}
	return time.Unix(ts.Sec, int64(ts.Nsec)), nil
}

func statxID(sx *unix.Statx_t) fileID {
	return fileID{dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), ino: sx.Ino}
}

// mountRootID is path's fileID, and whether path is a mount's root (statx's
// STATX_ATTR_MOUNT_ROOT; before Linux 5.8, which does not say, another device than its
// parent's), its last component not followed, asked without syncing with the file system;
// false when it is not one or cannot be asked.
func mountRootID(path string) (fileID, bool) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &sx); err != nil {
		return fileID{}, false
	}
	id := statxID(&sx)
	if sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return id, sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	}
	parent, ok := statID(filepath.Dir(path))
	return id, ok && parent.dev != id.dev
}

// statID is path's fileID, its last component not followed, asked without syncing with the
// file system (as pathFD.id); false when it cannot be had.
func statID(path string) (fileID, bool) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &sx); err != nil {
		return fileID{}, false
	}
	return statxID(&sx), true
}

// readOnly reports whether the mount the opened path is on refuses writes (statfs's
// ST_RDONLY, which a read-only bind mount sets as its file system's read-only flag does).
func (p *pathFD) readOnly() (bool, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(p.fd, &st); err != nil {
		return false, &os.PathError{Op: "statfs", Path: p.path, Err: err}
	}
	return st.Flags&unix.ST_RDONLY != 0, nil
}

// mountID is the ID of the mount an open file is on: statx's STATX_MNT_ID (Linux 5.8), else
// the mnt_id line of /proc/self/fdinfo.
func mountID(fd int) (uint64, error) {
	var sx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &sx)
	if err == nil && sx.Mask&unix.STATX_MNT_ID != 0 {
		return sx.Mnt_id, nil
	}
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mnt_id:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no mnt_id in fdinfo")
}

// reopenMount walks the path again from the walk's root, without following any component, and
// checks that it leads to the root of a mount of src: after mountOn, the new mount. Once a
// directory is a mount point it can be neither renamed nor removed, so the path still leads to
// it unless the directory, or one above it, was moved away before the mount landed on it (a
// hostile owner of a parent swapping it for a symlink or another directory); then this is an
// error, and the mount, made on the directory wherever it went, must be undone (undoMountOn).
// Reopening only the last name through the parent's descriptor would not see a parent moved:
// the descriptor moves with it.
//
// The directory the path leads through to the mount must be the one the walk opened, p's
// parent: another bind of the same volume (another alloc's), moved into the destination's
// place with its parent directory, is a mount of src too, and was taken for the new one, its
// read-only remount and propagation set on the other alloc's bind, and the new one left
// where the parent had gone (TestBindRefusesADestinationSwappedForAnotherBindOfTheVolume). A
// mount point cannot be renamed, so within that parent the name is the directory mounted on.
func (p *pathFD) reopenMount(src *pathFD) (int, error) {
	q, err := openNoFollow(p.root, p.path, createNothing)
	if err != nil {
		return -1, err
	}
	if same, err := sameDir(q.parent, p.parent); err != nil || !same {
		q.close()
		if err == nil {
			err = errors.New("a directory above it was moved or replaced while it was being mounted")
		}
		return -1, &os.PathError{Op: "check the new mount at", Path: p.path, Err: err}
	}
	ok, err := isMountOf(q.fd, q.parent, src.fd)
	if err != nil || !ok {
		q.close()
		if err == nil {
			err = errors.New("it, or a directory above it, was moved or replaced while it was being mounted")
		}
		return -1, &os.PathError{Op: "check the new mount at", Path: p.path, Err: err}
	}
	fd := q.fd
	q.fd = -1
	q.close()
	return fd, nil
}

// sameDir reports whether the open directories a and b are one (device and inode).
func sameDir(a, b int) (bool, error) {
	var x, y unix.Stat_t
	if err := unix.Fstat(a, &x); err != nil {
		return false, err
	}
	if err := unix.Fstat(b, &y); err != nil {
		return false, err
	}
	return x.Dev == y.Dev && x.Ino == y.Ino, nil
}

// readOnlyMount reports whether the mount the open file fd is on is read-only (statfs's
// ST_RDONLY: the mount's flag or its file system's).
func readOnlyMount(fd int) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false, err
	}
	return st.Flags&unix.ST_RDONLY != 0, nil
}

// isMountOf reports whether fd, a name in the directory parent, is the root of a bind mount of
// src: on another mount than parent, and the same file as src.
func isMountOf(fd, parent, src int) (bool, error) {
	mine, err := mountID(fd)
	if err != nil {
		return false, err
	}
	theirs, err := mountID(parent)
	if err != nil {
		return false, err
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		return false, err
	}
	if err := unix.Fstat(src, &b); err != nil {
		return false, err
	}
	return mine != theirs && a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// mountOn bind-mounts src (recursively) on dst through their file descriptors: on the very
// directory (or file) the walk checked, whatever its path has become since.
func mountOn(src, dst *pathFD) error {
	return unix.Mount(procPath(src.fd), procPath(dst.fd), "", unix.MS_BIND|unix.MS_REC, "")
}

// undoMountOn lazily unmounts what mountOn put on dst. umount, unlike mount, follows the mounts
// on the directory the descriptor names, so this finds the mount wherever that directory is.
func undoMountOn(dst *pathFD) error {
	return unix.Unmount(procPath(dst.fd), unix.MNT_DETACH)
}

// unmount unmounts what is mounted on the opened path through its parent's descriptor, so the
// kernel looks up nothing but the last name (not followed). The path's own descriptor is
// closed first: it holds the mount, which would make it busy. So does a copy of it in a child
// this process forked while it was open, until the child's exec closes it (it is close-on-exec):
// the unmount waits for a fork in progress to end (forksDone), and unbind tries an unmount
// answered EBUSY again for a moment (unmountBind).
func (p *pathFD) unmount(flags int) error {
	if p.fd >= 0 && p.fd != p.parent {
		_ = unix.Close(p.fd)
		p.fd = -1
		forksDone()
	}
	if p.parent < 0 {
		return fmt.Errorf("%s: cannot unmount the walk's root", p.path)
	}
	return unix.Unmount(procPath(p.parent)+"/"+p.name, flags|unix.UMOUNT_NOFOLLOW)
}

// forksDone waits for a fork this process has in progress to end: Go forks holding
// syscall.ForkLock for writing, and the child has exec()ed, or is at the point of it, when the
// lock is let go. A descriptor closed before forksDone is in no child forked after it, and in
// none forked before it once their execs have closed their copies, a moment later.
func forksDone() {
	syscall.ForkLock.RLock()
	syscall.ForkLock.RUnlock() //nolint:staticcheck // a barrier: nothing is held under it
}
