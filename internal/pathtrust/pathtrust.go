// Package pathtrust says whether another user could replace a directory volctl, often root,
// keeps using by its path: the state dir (internal/store) and the hostpath plugin's --root
// (internal/hostpath). A leaf: it imports nothing of ours.
package pathtrust

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// Ancestors returns what another user controls on the way to dir, or nil: a directory or
// symlink another user owns, or a directory other users may write that is not sticky (/tmp is,
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
		if OthersMayWrite(parent.Mode, parent.Gid) && parent.Mode&syscall.S_ISVTX == 0 { // sticky: only its owner renames an entry
			return &Problem{Path: cur, Why: fmt.Sprintf("is writable by other users (mode %#o)", parent.Mode&0o777)}
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
