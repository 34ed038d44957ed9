package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A volume's directory is its consumers' (0777, reached through their bind mounts): while the
// plugin, as root, copies it for a snapshot or a clone, or walks it for its stats, a consumer
// may rename any entry and put a symlink in its place, to /etc/shadow, say, or to /. A walk by
// path (filepath.WalkDir) looks at an entry and then opens it by its name again: an entry that
// was a regular file of the consumer's when looked at was opened through the symlink swapped in
// meanwhile, and a directory's name was listed through one, so the copy held root-only files'
// content, owned by the consumer (TestSnapshotDoesNotFollowASymlinkSwappedInWhileCopying). So
// the walk opens each entry once, relative to its directory's descriptor, with O_PATH and
// O_NOFOLLOW (a symlink is opened as itself), and everything it does with the entry (its type,
// owner and mode, its content, its listing) goes through that descriptor: whatever is renamed
// in later, the walk reads the file it looked at.

// A file system mounted inside a volume's directory is not the volume's data: a consumer's own
// mount (a privileged one, or made in its target and propagated back, as a shared mount does)
// of a tmpfs, of another volume, of the host's / itself. The walk stays on the volume's mount,
// as du -x and cp -x do: an entry that is the root of another mount (statx's
// STATX_ATTR_MOUNT_ROOT, which a bind mount of a directory of the same file system has too;
// else its st_dev) is neither visited nor entered, and the walk returns its path for the caller
// to say so. Before, a snapshot of a volume with the host's / bind-mounted in it copied the
// whole host, its root-only files and every other volume among them, and its stats counted it.

// maxTreeDepth bounds how deep a walk descends: each level holds a descriptor, and no path a
// program can name (PATH_MAX, 4096 bytes) is deeper than this. A consumer may nest directories
// further, one relative mkdir at a time; such a tree is refused, not walked until the plugin
// runs out of descriptors.
const maxTreeDepth = 2048

// treeEntry is one file of a walked tree: fd is an O_PATH descriptor of the file st describes
// (for a symlink, the link itself), rel its path below the root ("" for the root).
type treeEntry struct {
	rel string
	fd  int
	st  unix.Stat_t
	// born is the file's birth time (statx's STATX_BTIME), where bornKnown says the kernel
	// reported it: with the inode's generation, what tells apart two files that had one inode
	// number, one after the other (fileID).
	born      unix.StatxTimestamp
	bornKnown bool
}

func (e *treeEntry) kind() uint32 { return e.st.Mode & unix.S_IFMT }

// walk is one walkTree: what it calls, the device of its root, and the mounts it left out.
type walk struct {
	root   string
	visit  func(*treeEntry) error
	dev    uint64
	mounts []string
}

// walkTree calls visit for the directory root and everything below it on root's mount, parents
// before their entries, entries in lexical order, never following a symlink. An entry removed
// after its directory was listed is left out, and so is one another file system is mounted on:
// the paths of those, sorted, are mounts. It stops early when ctx is done or visit fails.
func walkTree(ctx context.Context, root string, visit func(*treeEntry) error) (mounts []string, err error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	w := &walk{root: root, visit: visit}
	err = w.entry(ctx, "", fd, 0)
	return w.mounts, err
}

// stat is fstat(2) of the O_PATH descriptor fd, with the file's birth time where the kernel
// reports it, into e, and whether the file is the root of a mount (below a walk's root: another
// file system mounted there), from one statx(2); known says the kernel answered that
// (STATX_ATTR_MOUNT_ROOT, Linux 5.8 on), which leftOut then goes by.
func stat(fd int, e *treeEntry) (mountRoot, known bool, err error) {
	var sx unix.Statx_t
	const want = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_UID | unix.STATX_GID | unix.STATX_BLOCKS | unix.STATX_INO | unix.STATX_NLINK | unix.STATX_BTIME
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, want, &sx); err != nil {
		return false, false, err
	}
	e.st = unix.Stat_t{
		Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino, Mode: uint32(sx.Mode),
		Uid: sx.Uid, Gid: sx.Gid, Size: int64(sx.Size), Blocks: int64(sx.Blocks), Nlink: uint64(sx.Nlink),
	}
	e.born, e.bornKnown = sx.Btime, sx.Mask&unix.STATX_BTIME != 0
	known = sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0
	return known && sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, known, nil
}

// leftOut says whether a walk leaves out an entry below its root: the root of a mount, as
// statx says where the kernel can (known); else, on an older kernel, one on another device
// than the walk's root (dev, rootDev). Not by the device where the kernel can say: a btrfs
// subvolume, or a directory of an overlayfs whose layers are on two file systems, has a device
// of its own and is no mount, its files the volume's data, which a snapshot must hold.
func leftOut(mountRoot, known bool, dev, rootDev uint64) bool {
	if known {
		return mountRoot
	}
	return dev != rootDev
}

// entry visits the entry at rel, whose descriptor fd it closes, and, when it is a directory,
// walks its entries. An entry below the root that is another mount's root is left out.
func (w *walk) entry(ctx context.Context, rel string, fd, depth int) error {
	defer unix.Close(fd)
	if err := ctx.Err(); err != nil {
		return err
	}
	path := filepath.Join(w.root, rel)
	e := &treeEntry{rel: rel, fd: fd}
	mountRoot, known, err := stat(fd, e)
	if err != nil {
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case rel == "":
		w.dev = e.st.Dev
	case leftOut(mountRoot, known, e.st.Dev, w.dev):
		w.mounts = append(w.mounts, path)
		return nil
	}
	if err := w.visit(e); err != nil {
		return err
	}
	if e.kind() != unix.S_IFDIR {
		return nil
	}
	if depth >= maxTreeDepth {
		return fmt.Errorf("%s: more than %d directories deep, deeper than any path can name; refusing to walk it", path, maxTreeDepth)
	}
	names, err := listDir(fd, path)
	if err != nil {
		return err
	}
	for _, name := range names {
		child, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // removed since the listing
		}
		if err != nil {
			return &fs.PathError{Op: "open", Path: filepath.Join(path, name), Err: err}
		}
		if err := w.entry(ctx, filepath.Join(rel, name), child, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// listDir lists the directory dirfd (an O_PATH descriptor) holds, sorted.
func listDir(dirfd int, path string) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	d := os.NewFile(uintptr(fd), path)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// reopen opens the file an O_PATH descriptor holds for reading: through /proc/self/fd, which
// reaches that very file, whatever its name holds now. It does not wait for a lease on it to
// be given up (O_NONBLOCK: EWOULDBLOCK, reopenUnleased).
func reopen(fd int, path string) (*os.File, error) {
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reopening %s: %w", path, err)
	}
	return f, nil
}

// reopenUnleased is reopen of a regular file without blocking on a lease: the file's owner, the
// volume's consumer, may hold a write lease on it and ignore the signal to give it up, and a
// plain open waits the kernel's lease-break-time (45 s) for each such file, deaf to ctx: a
// consumer leasing many files held a snapshot, its name and its source's delete for hours
// (TestCopyStopsWhenItsRequestEndsThoughAFileIsLeased). Asked without blocking, the open
// starts the lease's break and is tried again, at growing intervals, until it opens or ctx ends.
func reopenUnleased(ctx context.Context, fd int, path string) (*os.File, error) {
	wait := 5 * time.Millisecond
	for {
		f, err := reopen(fd, path)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reopening %s: a lease its owner holds on it was not given up before the request ended: %w", path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// copyTree copies the directory src to dst, which must not exist: directories, regular files
// and symlinks, with their modes and, when the plugin runs as root, their owners. Sockets,
// FIFOs and devices are skipped: they are endpoints, not data, and a snapshot of one means
// nothing. It stops early when ctx is done. It never follows a symlink, nor enters a mount
// inside src (walkTree): mounts are the paths of those it left out.
//
// The copy takes no more room than its source: a file's holes stay holes (copyFile), and the
// names of one file (hard links) are names of one copy. A consumer of the volume makes both
// without the room they would take copied out: truncate -s 1T, or ln a file a thousand times,
// in a volume of a megabyte. Copied as their sizes said, each snapshot or clone of the volume
// wrote those terabytes of zeros and copies onto the plugin's root, the file system of every
// other volume and of the plugin's own records, until it was full
// (TestCopyTakesNoMoreRoomThanItsSource). A name is made a link to a copy only of the very
// file copied: one whose inode number, birth time and generation are the copied file's
// (fileID). By its inode number alone, a consumer that removed both names of a linked file
// once it was copied and made a new file of two names meanwhile (a rotation, as rsnapshot's)
// had the new names linked to the removed file's copy where the file system gave the new file
// the number freed (ext4 does at once), the snapshot holding the old content for the new file
// (TestHardLinkToAFileDeletedDuringTheCopyIsNotMade). Where the kernel reports neither the
// birth time nor the generation (NFS), the copied file is held open (its O_PATH descriptor kept,
// up to maxPinned files a copy) until the copy is made: a file held open keeps its inode, so its
// number names no other file meanwhile (NFS's client renames a file removed while open, and the
// server keeps it) and the number alone tells its other names. Before, each name was copied:
// on an NFS root a file linked a thousand times was a thousand copies
// (TestCopyLinksNamesOfOneFileWhereTheKernelCannotTellFilesApart). A removal by another NFS
// client than the plugin's host is not held off so, nor seen: the number of a file the plugin
// holds open may then be given to a new file on the server during the copy. Past maxPinned such
// files (fewer where the process may open few: pinLimit), each further one's names are copied.
//
// What it made is on disk when it returns: its file system synced once it is all made
// (syncfs(2): one call, where a sync of each file cost a journal commit each, thousands for a
// volume of many small files). The copy is a snapshot or a new volume whose record is written
// (durably) once it is renamed into place: unsynced, a power loss in the next seconds left that
// record naming a copy of empty or partial files, or directories without their entries
// (TestCopiesAndNewVolumesAreOnDiskBeforeTheirRecords).
func copyTree(ctx context.Context, src, dst string) (mounts []string, err error) {
	type inode struct{ dev, ino uint64 }
	type copiedFile struct {
		copy   string
		id     fileID
		pinned bool // held open by the copy: its number names it alone until the copy is made
	}
	copied := map[inode]copiedFile{} // the copy of each file with more than one name, by its source
	var pins []int
	pinMax := pinLimit()
	defer func() {
		for _, fd := range pins {
			unix.Close(fd)
		}
	}()
	type defaultACL struct {
		dir   string
		value []byte
	}
	var defaults []defaultACL
	mounts, err = walkTree(ctx, src, func(e *treeEntry) error {
		target := filepath.Join(dst, e.rel)
		perm := fs.FileMode(e.st.Mode) & fs.ModePerm
		switch e.kind() {
		case unix.S_IFDIR:
			if err := os.Mkdir(target, perm); err != nil {
				return err
			}
		case unix.S_IFLNK:
			link, err := readLink(e.fd)
			if err != nil {
				return &fs.PathError{Op: "readlink", Path: filepath.Join(src, e.rel), Err: err}
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case unix.S_IFREG:
			ino := inode{e.st.Dev, e.st.Ino}
			first, ok := copied[ino]
			var id fileID
			if !first.pinned && (ok || e.st.Nlink > 1) {
				id = identifyFile(e, filepath.Join(src, e.rel))
			}
			if ok && (first.pinned || id == first.id) {
				if err := os.Link(first.copy, target); err != nil {
					return err
				}
				afterCopy(e.rel)
				return nil // its owner and mode are the first name's
			}
			if err := copyFile(ctx, e, filepath.Join(src, e.rel), target, perm); err != nil {
				return err
			}
			if e.st.Nlink > 1 && id.known() {
				copied[ino] = copiedFile{copy: target, id: id}
			} else if e.st.Nlink > 1 && len(pins) < pinMax {
				if fd, err := unix.FcntlInt(uintptr(e.fd), unix.F_DUPFD_CLOEXEC, 0); err == nil {
					pins = append(pins, fd)
					copied[ino] = copiedFile{copy: target, pinned: true}
				} else {
					pinMax = len(pins) // descriptors ran short: hold no more
				}
			}
		default:
			return nil
		}
		if err := copyOwnerAndMode(target, &e.st); err != nil {
			return err
		}
		dflt, err := copyACLs(e, target)
		if err != nil {
			return &fs.PathError{Op: "copying the POSIX ACLs of", Path: filepath.Join(src, e.rel), Err: err}
		}
		if dflt != nil {
			defaults = append(defaults, defaultACL{target, dflt})
		}
		afterCopy(e.rel)
		return nil
	})
	if err != nil {
		return mounts, err
	}
	// A directory's default ACL once what it holds is copied: set before, every file and
	// directory made in it inherited it, one without an ACL of its own given what the source
	// denied (TestCopyDoesNotGiveFilesWithoutAnACLTheirDirectorysDefault).
	for _, d := range defaults {
		if err := unix.Setxattr(d.dir, aclDefault, d.value, 0); err != nil {
			return mounts, &fs.PathError{Op: "setting the default POSIX ACL of", Path: d.dir, Err: err}
		}
	}
	d, err := os.Open(dst)
	if err != nil {
		return mounts, err
	}
	defer d.Close()
	if err := syncFS(d); err != nil {
		return mounts, fmt.Errorf("syncing the file system holding %s: %w", dst, err)
	}
	return mounts, nil
}

// fileID is what tells a file from one that had its inode number before it (removed, the
// number freed and given to a new file): its birth time and its generation (FS_IOC_GETVERSION:
// ext4, xfs and btrfs give each new inode a generation of its own, for NFS file handles), as
// far as the kernel reports them. Neither changes in a file's life (but a generation its
// owner sets: then the birth time still tells, where known).
type fileID struct {
	born      unix.StatxTimestamp
	bornKnown bool
	gen       uint32
	genKnown  bool
}

// known says the kernel reported something of the file's identity: one not known is not
// told from another of its number, and its names are copied, not linked.
func (id fileID) known() bool { return id.bornKnown || id.genKnown }

// maxPinned bounds the files of more than one name one copy holds open where the kernel cannot
// tell files apart (copyTree): a descriptor each, of the plugin's, which every RPC shares.
const maxPinned = 1024

// pinLimit is how many files one copy holds open (copyTree): maxPinned, and no more than a
// quarter of the descriptors the process may open (RLIMIT_NOFILE), which the copy's own opens
// and the plugin's RPCs share. A plugin run with a hard limit of 1024 (`docker run --ulimit
// nofile=1024:1024`) had its copy of a volume of a thousand linked files fail halfway, "too
// many open files", on an NFS root (TestCopyHoldsNoMoreFilesOpenThanTheProcessMaySpare).
func pinLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(uint64(maxPinned), rl.Cur/4))
}

// identifyFile is the fileID of the regular file e (at path, for errors); tests take the
// kernel's answer away, as NFS gives none.
var identifyFile = func(e *treeEntry, path string) fileID {
	id := fileID{born: e.born, bornKnown: e.bornKnown}
	f, err := reopen(e.fd, path) // the ioctl needs a descriptor opened for reading, not O_PATH
	if err != nil {
		return id // the generation unknown: the name is not linked to a copy by it
	}
	defer f.Close()
	if gen, err := unix.IoctlGetUint32(int(f.Fd()), fsIocGetVersion); err == nil {
		id.gen, id.genKnown = gen, true
	}
	return id
}

// fsIocGetVersion is FS_IOC_GETVERSION, _IOR('v', 1, long), which x/sys does not define: its
// FS_IOC_GETFLAGS, _IOR('f', 1, long) on this architecture, with 'v' for its type.
const fsIocGetVersion uint = unix.FS_IOC_GETFLAGS&^(0xff<<8) | 'v'<<8

// afterCopy is called with each entry's path below the source once it is copied: tests change
// the source there, as a consumer may at any point of the walk.
var afterCopy = func(rel string) {}

// syncFS is syncfs(2) of the file system holding f; tests record what is synced, and when.
var syncFS = func(f *os.File) error { return unix.Syncfs(int(f.Fd())) }

// readLink is what the symlink an O_PATH descriptor holds points to.
func readLink(fd int) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// copyFile copies the regular file e to dst, which it creates with perm: its data, range by
// range (SEEK_DATA, SEEK_HOLE), so that its holes are holes in the copy too, and its size. It
// stops between two pieces of copyChunk bytes when ctx is done: the copy of a large file holds
// the plugin's lock, which every other request waits on.
func copyFile(ctx context.Context, e *treeEntry, src, dst string, perm fs.FileMode) error {
	in, err := reopenUnleased(ctx, e.fd, src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if err := copyData(ctx, in, out); err != nil {
		out.Close()
		return fmt.Errorf("copying %q: %w", src, err)
	}
	return out.Close()
}

// copyChunk is the most copyData copies before it looks at its context again.
const copyChunk = 64 << 20

// copyData copies in's data ranges to the same offsets of out, an empty file, and gives out
// in's size: what lies between the ranges, holes, is left unwritten. A file whose size changes
// meanwhile (its consumer writes on, or cuts it short: logrotate's copytruncate) is copied as
// far as its data reaches when looked at: a SEEK_HOLE from data found a moment before, past
// the end now, fails ENXIO, as the end of the file, not the copy's failure
// (TestFileTruncatedWhileCopiedIsCopiedAsFarAsItReached).
func copyData(ctx context.Context, in, out *os.File) error {
	first, err := in.Stat()
	if err != nil {
		return err
	}
	var off, end int64
ranges:
	for {
		data, err := seekFile(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data at or after off: a hole to the end
		}
		hole := int64(math.MaxInt64) // a file system that cannot tell holes: data to the end
		switch {
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
			data = off
		case err != nil:
			return err
		default:
			hole, err = seekFile(int(in.Fd()), data, unix.SEEK_HOLE)
			if errors.Is(err, unix.ENXIO) {
				break ranges // cut short at data since the SEEK_DATA
			}
			if err != nil {
				return err
			}
		}
		for off = data; off < hole; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := copyRange(in, out, off, min(hole-off, copyChunk))
			off += n
			if err != nil {
				return err
			}
			if n == 0 {
				break // the file was cut short meanwhile
			}
		}
		end = max(end, off)
		if off < hole {
			break
		}
	}
	// A hole to the end as it was when the copy began, or as far as the file reaches now when
	// cut short since: not as far as a file grown meanwhile reaches, whose new bytes, past the
	// last data found, would read as zeros it never held (TestFileGrownWhileCopiedHoldsNoZerosItNeverHad).
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	return out.Truncate(max(end, min(first.Size(), fi.Size())))
}

// seekFile is lseek(2); tests change a file between two of copyData's.
var seekFile = unix.Seek

// copyRange copies n bytes at off of in to the same offset of out, or fewer where in ends
// first: through copy_file_range(2), which shares the blocks where the file system can (xfs,
// btrfs), else by reading and writing.
func copyRange(in, out *os.File, off, n int64) (int64, error) {
	var done int64
	for done < n {
		roff, woff := off+done, off+done
		c, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(n-done), 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			if done == 0 && (errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)) {
				return io.Copy(io.NewOffsetWriter(out, off), io.NewSectionReader(in, off, n))
			}
			return done, err
		}
		if c == 0 {
			break // in ends before off+n
		}
		done += int64(c)
	}
	return done, nil
}

// copyOwnerAndMode repeats the source's owner (best effort: only root may give files away) and
// its exact permission bits, which Mkdir and OpenFile filtered through the umask.
func copyOwnerAndMode(target string, st *unix.Stat_t) error {
	if os.Geteuid() == 0 {
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil // a symlink's own mode means nothing on Linux
	}
	mode := fs.FileMode(st.Mode) & fs.ModePerm
	for _, bit := range []struct {
		unix uint32
		mode fs.FileMode
	}{{unix.S_ISUID, fs.ModeSetuid}, {unix.S_ISGID, fs.ModeSetgid}, {unix.S_ISVTX, fs.ModeSticky}} {
		if st.Mode&bit.unix != 0 {
			mode |= bit.mode
		}
	}
	return os.Chmod(target, mode)
}

// The extended attributes that hold a file's POSIX ACLs: its own, and a directory's default
// for what is made in it.
const (
	aclAccess  = "system.posix_acl_access"
	aclDefault = "system.posix_acl_default"
)

// copyACLs gives target, a copy of e (a directory or regular file), e's POSIX ACL, and returns
// e's default ACL, a directory's, for the caller to set once the directory's content is copied.
// A file with an ACL has the ACL's mask in its mode's group bits, not its owning group's own
// entry: copied without it (mode 0600 shared with one user, `setfacl -m u:4242:rw`, reads
// 0660), the copy gave the owning group what the ACL denied it
// (TestSnapshotOfAFileWithAnACLDoesNotGiveItsGroupTheMask). One the copy's file system cannot
// hold fails the copy, which would otherwise widen what the source allowed.
func copyACLs(e *treeEntry, target string) (dflt []byte, err error) {
	if k := e.kind(); k != unix.S_IFDIR && k != unix.S_IFREG {
		return nil, nil
	}
	src := "/proc/self/fd/" + strconv.Itoa(e.fd) // the very file the walk holds
	for _, name := range []string{aclAccess, aclDefault} {
		v, err := getXattr(src, name)
		if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) || len(v) == 0 {
			continue // none, or a file system that holds none
		}
		if err != nil {
			return nil, err
		}
		if name == aclDefault {
			dflt = v
			continue
		}
		if err := unix.Setxattr(target, name, v, 0); err != nil {
			return nil, err
		}
	}
	return dflt, nil
}

// getXattr is path's extended attribute name, however long.
func getXattr(path, name string) ([]byte, error) {
	for size := 256; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Getxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// usage is what a directory tree occupies: bytes of allocated blocks and the number of inodes,
// and the mounts inside it its walk left out.
type usage struct {
	bytes  int64
	inodes int64
	mounts []string
}

// diskUsage walks dir like du: it counts allocated blocks, not apparent sizes, and each inode
// once, however many hard links in dir name it (a package store's or a backup's links would
// otherwise multiply a volume's usage to a CO asking NodeGetVolumeStats:
// TestNodeGetVolumeStatsCountsAHardLinkedFileOnce). It never follows a symlink, nor enters a
// mount (walkTree): a directory swapped for a link to /, or with / mounted on it, is not
// counted as the volume's.
func diskUsage(ctx context.Context, dir string) (usage, error) {
	var u usage
	var err error
	linked := map[[2]uint64]bool{} // the walk's inodes of more than one link, by device and number
	u.mounts, err = walkTree(ctx, dir, func(e *treeEntry) error {
		if e.kind() != unix.S_IFDIR && e.st.Nlink > 1 {
			id := [2]uint64{e.st.Dev, e.st.Ino}
			if linked[id] {
				return nil
			}
			linked[id] = true
		}
		u.inodes++
		u.bytes += e.st.Blocks * 512
		return nil
	})
	return u, err
}
