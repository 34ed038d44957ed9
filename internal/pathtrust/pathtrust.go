// Package pathtrust says whether another user could replace a directory volctl, often root,
// keeps using by its path: the state dir (internal/store), the hostpath plugin's --root
// (internal/hostpath), and the programs the agent runs as plugins (Program, internal/agent).
// A leaf: it imports nothing of ours.
package pathtrust

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxLinks bounds the symlinks Ancestors follows, as the kernel's (40) does a lookup's.
const maxLinks = 40

// Problem is what on the way to a directory another user controls.
type Problem struct {
	// Path is the directory, or "symlink PATH", another user controls.
	Path string
	// Why says how: "is owned by uid 4242, neither root nor this user (uid 0)", "is writable
	// by other users (mode 0777)".
	Why string
}

// Dir is Path without the "symlink " that names a symlink: what to chown or chmod.
func (p *Problem) Dir() string { return strings.TrimPrefix(p.Path, "symlink ") }

// Trusted says whether a file of owner uid is this user's or root's.
func Trusted(uid uint32) bool { return uid == 0 || uid == uint32(os.Geteuid()) }

// OthersMayWrite says whether users other than the owner of a file of mode and group gid may
// write it: its other bits, or its group bits for a group that is neither root's nor this
// user's own (a umask of 002 makes a user's directories writable by their private group).
func OthersMayWrite(mode, gid uint32) bool {
	return mode&0o002 != 0 || mode&0o020 != 0 && gid != 0 && gid != uint32(os.Getegid())
}

// The POSIX access ACL as Linux stores it in the system.posix_acl_access attribute: a version
// (2), then entries of a tag, permissions and an id, little-endian (acl(5), posix_acl_xattr.h).
const (
	aclAttr    = "system.posix_acl_access"
	aclVersion = 2
	aclUser    = 0x02 // ACL_USER: a named user, id a uid
	aclGroup   = 0x08 // ACL_GROUP: a named group, id a gid
	aclMask    = 0x10 // ACL_MASK: what named entries and the owning group get at most
	aclWrite   = 0o2
)

// ACLWriter names a user or group other than root, this user and this user's group that the
// POSIX access ACL of the file at path (not followed if a symlink) lets write it: "uid 4242",
// "gid 4242"; "" for none, or no ACL (none set, or a file system without them). A named
// entry's write counts where the mask lets it through; the mode's group bits then show the
// mask, not the owning group's permission, so OthersMayWrite, of the mode alone, sees a
// directory root owns with mode 0775 and group root, writable by uid 4242 through
// `setfacl -m u:4242:rwx`, as no other user's to write. chmod go-w (or 700) drops the mask's
// write, and so every named entry's. mode is the file's: with no group write in it the mask has
// none either, and nothing is read (most directories: 0755).
func ACLWriter(path string, mode uint32) string {
	if mode&0o020 == 0 {
		return ""
	}
	buf := make([]byte, 4+8*32)
	for {
		n, err := unix.Lgetxattr(path, aclAttr, buf)
		if errors.Is(err, unix.ERANGE) && len(buf) < 1<<20 {
			buf = make([]byte, len(buf)*4)
			continue
		}
		if err != nil || n < 4 || binary.LittleEndian.Uint32(buf) != aclVersion {
			return ""
		}
		return aclWriter(buf[4:n])
	}
}

// aclWriter is ACLWriter of an ACL's entries.
func aclWriter(entries []byte) string {
	mask := uint16(aclWrite) // no mask entry: no named entries either
	who := ""
	for ; len(entries) >= 8; entries = entries[8:] {
		tag, perm, id := binary.LittleEndian.Uint16(entries), binary.LittleEndian.Uint16(entries[2:]), binary.LittleEndian.Uint32(entries[4:])
		switch {
		case tag == aclMask:
			mask = perm
		case who != "" || perm&aclWrite == 0:
		case tag == aclUser && !Trusted(id):
			who = fmt.Sprintf("uid %d", id)
		case tag == aclGroup && id != 0 && id != uint32(os.Getegid()):
			who = fmt.Sprintf("gid %d", id)
		}
	}
	if mask&aclWrite == 0 {
		return ""
	}
	return who
}

// Ancestors returns what another user controls on the way to dir, or nil: a directory or
// symlink another user owns, or a directory other users may write (by its mode or its ACL) that is not sticky (/tmp is,
// so a directory of this user's in it stays its own). Such a user could rename dir away and put
// one of theirs in its place, which volctl, often root and a daemon for days, goes on using by
// its path: checking dir itself when opening it settles nothing after that. Owned by root or
// this user is trusted, as OpenSSH's StrictModes trusts a path. It walks dir as the kernel
// resolves it, each symlink's own owner checked and its target walked in turn; dir's own owner
// is the caller's to judge (unless dir is a symlink: then that link's). A part that does not
// exist yet ends the walk (the caller makes it, this user's), as does anything it cannot read
// (the caller's own Stat then says what).
func Ancestors(dir string) *Problem {
	uid := os.Geteuid()
	cur, todo, links := "/", strings.Split(dir, "/"), 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		var parent syscall.Stat_t
		if err := syscall.Lstat(cur, &parent); err != nil {
			return nil
		}
		if parent.Mode&syscall.S_ISVTX == 0 { // sticky: only its owner renames an entry
			if OthersMayWrite(parent.Mode, parent.Gid) {
				return &Problem{Path: cur, Why: fmt.Sprintf("is writable by other users (mode %#o)", parent.Mode&0o777)}
			}
			if who := ACLWriter(cur, parent.Mode); who != "" {
				return &Problem{Path: cur, Why: fmt.Sprintf("is writable by %s through its ACL (mode %#o, getfacl shows it)", who, parent.Mode&0o777)}
			}
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil // no owner to check: volctl only runs on Linux
		}
		last := len(todo) == 0 && fi.Mode()&fs.ModeSymlink == 0
		if !last && !Trusted(st.Uid) {
			what := ""
			if fi.Mode()&fs.ModeSymlink != 0 {
				what = "symlink "
			}
			return &Problem{Path: what + next, Why: fmt.Sprintf("is owned by uid %d, neither root nor this user (uid %d)", st.Uid, uid)}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return nil // a loop: Stat says so
		}
		target, err := os.Readlink(next)
		if err != nil {
			return nil
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return nil
}

// FileKind names a file type for an error about a file that is not the regular file or
// directory volctl makes or expects: "a symlink", "a named pipe".
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// OpenRegular opens path with flag (made with perm if flag creates it) without following a
// symlink at its name and without blocking, and makes sure what it opened is a regular file:
// anything else is a *NotRegularError naming it. Whoever may write the directory may have put
// something else there first: a symlink, which the open would follow, to a file of root's that
// volctl would then write; a named pipe, which would hold open(2) for good (a writer waits there
// for a reader), where neither a signal nor a context reaches.
func OpenRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, &NotRegularError{Path: path, Kind: FileKind(fi.Mode())}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Path: path, Kind: FileKind(fi.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// NotRegularError is OpenRegular's refusal of what is not a regular file: Kind is FileKind's.
type NotRegularError struct{ Path, Kind string }

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.Kind)
}

// Replaceable returns what another user controls of the file or directory at path that volctl
// uses by its path, or nil: what Ancestors finds on the way to it, or the file itself (its
// symlinks followed): owned by another user than root or this one, or writable by other users
// by its mode or its ACL. A sticky directory counts as writable: its bit stops others renaming
// what is in it, not adding to it. What does not exist, or cannot be read, passes: the caller's
// own use of the path then says what.
func Replaceable(path string) *Problem {
	if pr := Ancestors(path); pr != nil {
		return pr
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil
	}
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r // the ACL read, and what is named, is the file, not a symlink to it
	}
	switch {
	case !Trusted(st.Uid):
		return &Problem{Path: real, Why: fmt.Sprintf("is owned by uid %d, neither root nor this user (uid %d)", st.Uid, os.Geteuid())}
	case OthersMayWrite(st.Mode, st.Gid):
		return &Problem{Path: real, Why: fmt.Sprintf("is writable by other users (mode %#o)", st.Mode&0o7777)}
	}
	if who := ACLWriter(real, st.Mode); who != "" {
		return &Problem{Path: real, Why: fmt.Sprintf("is writable by %s through its ACL (mode %#o, getfacl shows it)", who, st.Mode&0o7777)}
	}
	return nil
}

// Program returns what another user controls of the program volctl runs for command, found at
// path (exec.LookPath's answer), or nil: Replaceable of path and, for a command named alone
// (looked up in PATH), of each directory of PATH searched before path's own, where another user
// could put a program of that name that the next lookup finds first (shadow then says so).
func Program(command, path string) (pr *Problem, shadow bool) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // a relative command ("bin/plugin") is run from the working directory: walked from there, not from "/"
	}
	if !strings.Contains(command, "/") {
		found := filepath.Dir(path)
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if dir == "" || !filepath.IsAbs(dir) {
				continue // exec.LookPath refuses what it would find there (exec.ErrDot)
			}
			if filepath.Clean(dir) == found {
				break
			}
			if pr := Replaceable(dir); pr != nil {
				return pr, true
			}
		}
	}
	return Replaceable(path), false
}
