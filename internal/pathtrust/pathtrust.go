// Package pathtrust says whether another user could replace a directory volctl, often root,
// keeps using by its path: the state dir (internal/store), the hostpath plugin's --root
// (internal/hostpath), and the programs the agent runs as plugins (Program, internal/agent).
// A leaf: it imports nothing of ours.
package pathtrust

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	// Shadowed, of Program's answer, is the name looked up in PATH that a program another user
	// put in Path would be found for first; "" when Path is on the way to the program itself.
	Shadowed string
	// Script, of Program's answer, is the script whose #! line names the interpreter Path is, or
	// is on the way to (or, through env, the command it runs); "" when that is the program.
	Script string
	// ELF, of Program's answer, is the ELF program (the command, or a script's interpreter)
	// whose dynamic loader reads from Path, which Entry names: "RUNPATH $ORIGIN/../lib",
	// "RPATH /opt/x/lib", "interpreter (PT_INTERP) /lib64/ld-linux-x86-64.so.2"; "" when Path
	// is on the way to a program or searched for one.
	ELF, Entry string
	// System, of Program's answer, says Entry is the system's, not the program's: the file of
	// libraries the dynamic loader loads into every program (/etc/ld.so.preload), or a library
	// it names; what to fix is there, not in the program.
	System bool
}

// Dir is Path without the "symlink " that names a symlink: what to chown or chmod.
func (p *Problem) Dir() string { return strings.TrimPrefix(p.Path, "symlink ") }

// Trusted says whether a file of owner uid is this user's or root's.
func Trusted(uid uint32) bool { return uid == 0 || uid == uint32(os.Geteuid()) }

// OthersMayWrite says whether users other than the owner of a file of mode and group gid may
// write it: its other bits, or its group bits for a group that is neither root's nor this
// user's own (a umask of 002 makes a user's directories writable by their private group) and
// has a member other than root (groupOthers: Debian's staff, owning /usr/local/bin with mode
// 2775 on older installs, has none).
func OthersMayWrite(mode, gid uint32) bool { return writers(mode, gid) != "" }

// Writable says how users other than the owner may write a file of mode and group gid, or ""
// when none may (OthersMayWrite): "is writable by other users (mode 0777)", or, by its group,
// "is writable by other users (mode 02775): group staff (gid 50) may write it, and alice is in
// it". The mode is shown whole: setuid, setgid and sticky bits included.
func Writable(mode, gid uint32) string {
	who := writers(mode, gid)
	if who == "" {
		return ""
	}
	why := fmt.Sprintf("is writable by other users (mode %#o)", mode&0o7777)
	if who != "other users" {
		why += ": " + who
	}
	return why
}

// Writers is who other than the owner may write a file of mode and group gid: "other users",
// the group and why it counts ("group staff (gid 50) may write it, and alice is in it"), or ""
// when none may (OthersMayWrite).
func Writers(mode, gid uint32) string { return writers(mode, gid) }

// writers is Writers.
func writers(mode, gid uint32) string {
	switch {
	case mode&0o002 != 0:
		return "other users"
	case mode&0o020 == 0 || gid == 0 || gid == uint32(os.Getegid()):
		return ""
	}
	return groupOthers(gid)
}

// GroupFile, PasswdFile and GshadowFile are the account files groupOthers reads a group's
// members from; a test points them at files of its own.
var GroupFile, PasswdFile, GshadowFile = "/etc/group", "/etc/passwd", "/etc/gshadow"

// groupOthers says which users other than root a group gid of write holds, as "group staff
// (gid 50) may write it, and alice is in it", or "" when it has no member but root: none
// named in its GroupFile member list but root (any uid 0 account of PasswdFile), and no
// PasswdFile account but root's with it as its primary group, no password newgrp takes, and
// none but root named as its administrator or member in GshadowFile (a group with a password
// or a gshadow member was taken for root's alone before: TestGroupOfRootAloneIsNotOthers).
// Debian documents its staff group (/etc/staff-group-for-usr-local) as root's equal, normally
// empty. What cannot be told counts as others: a group GroupFile does not list, an account file that cannot be read, or
// one with NIS compat entries (+ or - lines), whose members another database holds.
func groupOthers(gid uint32) string {
	name := fmt.Sprintf("group gid %d", gid)
	unknown := func(why string) string { return name + " may write it, whose members volctl cannot tell (" + why + ")" }
	passwd, err := accountLines(PasswdFile)
	if err != nil {
		return unknown(err.Error())
	}
	groups, err := accountLines(GroupFile)
	if err != nil {
		return unknown(err.Error())
	}
	root := map[string]bool{}
	var others []string
	for _, f := range passwd { // name:password:uid:gid:...
		if len(f) < 4 {
			continue
		}
		if f[2] == "0" {
			root[f[0]] = true
		} else if f[3] == fmt.Sprint(gid) {
			others = append(others, f[0])
		}
	}
	member := func(list string) {
		for _, m := range strings.Split(list, ",") {
			if m = strings.TrimSpace(m); m != "" && !root[m] && !slices.Contains(others, m) {
				others = append(others, m)
			}
		}
	}
	const withPassword = "anyone given its password (newgrp)"
	var names []string
	for _, f := range groups { // name:password:gid:member,member
		if len(f) < 4 || f[2] != fmt.Sprint(gid) {
			continue
		}
		if len(names) == 0 {
			name = fmt.Sprintf("group %s (gid %d)", f[0], gid)
		}
		names = append(names, f[0])
		if groupPassword(f[1]) && !slices.Contains(others, withPassword) {
			others = append(others, withPassword)
		}
		member(f[3])
	}
	if len(names) == 0 {
		return unknown(GroupFile + " does not list it")
	}
	// gpasswd keeps a group's password, its administrators and members of its own in
	// GshadowFile: any of them gets the group's gid.
	shadow, err := accountLines(GshadowFile)
	switch {
	case errors.Is(err, fs.ErrNotExist): // no gshadow: /etc/group says all
	case err != nil:
		return unknown(err.Error())
	}
	for _, f := range shadow { // name:password:admin,admin:member,member
		if len(f) < 4 || !slices.Contains(names, f[0]) {
			continue
		}
		if groupPassword(f[1]) && !slices.Contains(others, withPassword) {
			others = append(others, withPassword)
		}
		member(f[2])
		member(f[3])
	}
	switch {
	case len(others) == 1:
		return fmt.Sprintf("%s may write it, and %s is in it", name, others[0])
	case len(others) > 1:
		return fmt.Sprintf("%s may write it, and %s are in it", name, strings.Join(others, ", "))
	}
	return ""
}

// groupPassword says a group's password field holds a password newgrp(1) takes: not empty,
// "x" (kept in gshadow), "*", or locked ("!...").
func groupPassword(field string) bool {
	return field != "" && field != "x" && field != "*" && !strings.HasPrefix(field, "!")
}

// accountLines reads an account file of colon-separated fields, one account a line, and
// refuses one with NIS compat entries (a line starting with + or -).
func accountLines(path string) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '+' || line[0] == '-' {
			return nil, fmt.Errorf("%s has NIS compat entries", path)
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out, nil
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
// (the caller's own Stat then says what). A relative dir is walked from the working directory,
// as the kernel resolves it, never from "/".
func Ancestors(dir string) *Problem {
	pr, _ := walk(dir)
	return pr
}

// walk is Ancestors, and, when it ended at a part of dir that does not exist, the directory
// (symlinks resolved) that part is missing in: "" when all of dir exists or the walk ended
// otherwise.
func walk(dir string) (pr *Problem, missingIn string) {
	uid := os.Geteuid()
	dir = absolute(dir)
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
			return nil, ""
		}
		if parent.Mode&syscall.S_ISVTX == 0 { // sticky: only its owner renames an entry
			if why := Writable(parent.Mode, parent.Gid); why != "" {
				return &Problem{Path: cur, Why: why}, ""
			}
			if who := ACLWriter(cur, parent.Mode); who != "" {
				return &Problem{Path: cur, Why: fmt.Sprintf("is writable by %s through its ACL (mode %#o, getfacl shows it)", who, parent.Mode&0o7777)}, ""
			}
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, cur
		}
		if err != nil {
			return nil, ""
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil, "" // no owner to check: volctl only runs on Linux
		}
		last := len(todo) == 0 && fi.Mode()&fs.ModeSymlink == 0
		if !last && !Trusted(st.Uid) {
			what := ""
			if fi.Mode()&fs.ModeSymlink != 0 {
				what = "symlink "
			}
			return &Problem{Path: what + next, Why: fmt.Sprintf("is owned by uid %d, neither root nor this user (uid %d)", st.Uid, uid)}, ""
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return nil, "" // a loop: Stat says so
		}
		target, err := os.Readlink(next)
		if err != nil {
			return nil, ""
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return nil, ""
}

// absolute is path made absolute from the working directory, where the kernel resolves a
// relative path (a relative --out, --config or command): walked from "/" it would be another
// file's way checked, one another user's path passing and a trusted one refused. Cleaned
// unless it holds "..": one after a symlink is the kernel's (walk's) to resolve, not dropped
// with the name before it. path as it is when the working directory cannot be told (then its
// walk's Lstats fail too).
func absolute(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if slices.Contains(strings.Split(path, "/"), "..") {
		return wd + "/" + path
	}
	return filepath.Join(wd, path)
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
// own use of the path then says what. A relative path is the working directory's, and named
// absolute.
func Replaceable(path string) *Problem {
	path = absolute(path)
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
	if !Trusted(st.Uid) {
		return &Problem{Path: real, Why: fmt.Sprintf("is owned by uid %d, neither root nor this user (uid %d)", st.Uid, os.Geteuid())}
	}
	if why := Writable(st.Mode, st.Gid); why != "" {
		return &Problem{Path: real, Why: why}
	}
	if who := ACLWriter(real, st.Mode); who != "" {
		return &Problem{Path: real, Why: fmt.Sprintf("is writable by %s through its ACL (mode %#o, getfacl shows it)", who, st.Mode&0o7777)}
	}
	return nil
}

// LoaderEnv is what of a program's environment steers its dynamic loader to libraries:
// LD_LIBRARY_PATH, and the libraries LD_PRELOAD and LD_AUDIT name (each a name of its own).
type LoaderEnv struct {
	LibraryPath string
	Preload     []string
}

// Program returns what another user controls of the program volctl runs for command, found at
// path (exec.LookPath's answer), or nil: Replaceable of path and, for a command named alone
// (looked up in PATH), of each directory of PATH searched before path's own, where another user
// could put a program of that name that the next lookup finds first (Shadowed then names it),
// or, for one that does not exist, of the directory another user could make it in. A script's
// #! interpreter is the program the kernel runs: it is checked alike, as is the command
// `#!/usr/bin/env NAME` runs, looked up in envPath (the PATH the program is given), to
// maxScripts levels. An ELF program's loader and the directories its RUNPATH or RPATH searches
// for libraries are checked too (loaded: ELF and Entry name them), as are those of env: the
// dynamic loader searches env.LibraryPath's directories for every library of the program's, and
// of its libraries', before their RUNPATHs, and loads env.Preload's before the program's own;
// the libraries it finds so are checked and followed as those a RUNPATH finds. The directories and
// the preloads' paths themselves are the caller's to check (LibraryDir, Source): one another
// user controls is passed over here.
func Program(command, path, envPath string, env LoaderEnv) *Problem {
	if !strings.Contains(command, "/") {
		if pr := shadowed(command, filepath.Dir(path), os.Getenv("PATH"), false); pr != nil {
			return pr
		}
	}
	return program(path, envPath, env, 0)
}

// DefaultExecPath is the PATH execvp(3) searches, and so env(1), when the environment has
// none (glibc's _CS_PATH).
const DefaultExecPath = "/bin:/usr/bin"

// maxScripts bounds the #! lines Program follows, as the kernel's (4) does an exec's.
const maxScripts = 4

// program is Program of the file at path, reached through depth #! lines.
func program(path, envPath string, env LoaderEnv, depth int) *Problem {
	path = absolute(path) // a relative command ("bin/plugin") is run from the working directory
	if pr := makeable(path); pr != nil {
		return pr
	}
	if depth >= maxScripts {
		return nil
	}
	interp, arg, ok := shebang(path)
	if !ok {
		return loadedWith(path, env)
	}
	var pr *Problem
	if name := envCommand(interp, arg, &envPath); name != "" {
		if pr = program(interp, envPath, env, depth+1); pr == nil {
			if strings.Contains(name, "/") {
				pr = program(name, envPath, env, depth+1)
			} else {
				_, pr = lookedUp(name, envPath, env, depth+1)
			}
		}
	} else {
		pr = program(interp, envPath, env, depth+1)
	}
	if pr != nil && pr.Script == "" {
		pr.Script = path
	}
	return pr
}

// LookedUp is Program of the program another one runs by name (git's GIT_SSH=ssh, its
// GIT_ASKPASS), looked up in envPath (the PATH the program is given) as execvp(3) does: found is
// where, "" when no directory of envPath has it; the problem is a directory searched before
// found's that another user could put a program of that name in (Shadowed names it), or found
// itself, a script's interpreter, an ELF program's libraries, as Program's.
func LookedUp(name, envPath string, env LoaderEnv) (found string, pr *Problem) {
	return lookedUp(name, envPath, env, 0)
}

// lookedUp is LookedUp of a program reached through depth #! lines.
func lookedUp(name, envPath string, env LoaderEnv, depth int) (string, *Problem) {
	found, ok := lookPath(name, envPath)
	if !ok {
		return "", shadowed(name, "", envPath, true)
	}
	if pr := shadowed(name, filepath.Dir(found), envPath, true); pr != nil {
		return found, pr
	}
	return found, program(found, envPath, env, depth)
}

// shadowed is what another user controls of the directories of pathList searched for name
// before found's (all of them when found is ""): one they could put a program named name in,
// or make, when it does not exist (makeable). A relative directory ("" is ".") is searched from
// the working directory when relative is set, as execvp(3), which env(1) uses, does; else it is
// passed over, as exec.LookPath refuses what it would find there (exec.ErrDot).
func shadowed(name, found, pathList string, relative bool) *Problem {
	for _, dir := range searched(pathList, relative) {
		if dir == found {
			break
		}
		if pr := makeable(dir); pr != nil {
			pr.Shadowed = name
			return pr
		}
	}
	return nil
}

// makeable is Replaceable of path or, when it does not exist, of the directory it is missing
// in, where another user who may write it (sticky or not) could make it: then the Problem's
// Path is path and its Why says where.
func makeable(path string) *Problem {
	pr, missingIn := walk(path)
	if pr != nil {
		return pr
	}
	if missingIn == "" {
		return Replaceable(path)
	}
	if in := Replaceable(missingIn); in != nil {
		return &Problem{Path: path, Why: fmt.Sprintf("does not exist, and %s, where another user could make it, %s", in.Path, in.Why)}
	}
	return nil
}

// searched is the directories, cleaned, a lookup searches of pathList: its relative ones, ""
// being ".", from the working directory when relative is set, else none of them. An empty
// pathList is one "" (PATH set to nothing; an unset PATH is execvp's default, DefaultExecPath,
// the caller's to give).
func searched(pathList string, relative bool) []string {
	var dirs []string
	for _, dir := range pathDirs(pathList) {
		if !filepath.IsAbs(dir) {
			abs, err := filepath.Abs(dir)
			if !relative || err != nil {
				continue
			}
			dir = abs
		}
		dirs = append(dirs, filepath.Clean(dir))
	}
	return dirs
}

// pathDirs is the entries of pathList as execvp(3) reads them: an empty pathList (PATH set to
// nothing) is one "", the working directory, not none (filepath.SplitList's answer).
func pathDirs(pathList string) []string {
	if pathList == "" {
		return []string{""}
	}
	return filepath.SplitList(pathList)
}

// SearchPath is pathList with every directory another user controls left out: kept, in its
// order, is what remains; dropped says, for each directory left out, who controls it (makeable:
// the directory or one on the way to it theirs or writable by them, or, missing, one they could
// make), or that it is relative ("" is ".", and so is an empty pathList, execvp's working
// directory), searched from whatever directory the program runs in. A program searching kept
// finds only what root or this user put there.
func SearchPath(pathList string) (kept []string, dropped []*Problem) {
	for _, dir := range pathDirs(pathList) {
		if !filepath.IsAbs(dir) {
			shown := dir
			if shown == "" {
				shown = "."
			}
			dropped = append(dropped, &Problem{Path: shown, Why: "is relative: it is searched from whatever directory the program runs in"})
			continue
		}
		if pr := makeable(filepath.Clean(dir)); pr != nil {
			dropped = append(dropped, pr)
			continue
		}
		kept = append(kept, dir)
	}
	return kept, dropped
}

// lookPath is execvp(3)'s lookup of name in pathList, as env(1) does it.
func lookPath(name, pathList string) (string, bool) {
	for _, dir := range searched(pathList, true) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// Shebang is shebang: the interpreter and argument of the #! line of the script at path.
func Shebang(path string) (interp, arg string, ok bool) { return shebang(path) }

// shebang reads the #! line of the file at path, as the kernel does (binfmt_script): its first
// 256 bytes, the interpreter up to a blank, and the rest of the line, trimmed, as one argument.
// ok is false for a file that does not start with #!, or cannot be read (nor waited on: a named
// pipe is not opened for good).
func shebang(path string) (interp, arg string, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", "", false
	}
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, ok := bytes.CutPrefix(buf[:n], []byte("#!"))
	if !ok {
		return "", "", false
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	rest := strings.TrimLeft(string(line), " \t")
	interp, arg, _ = strings.Cut(strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		return r
	}, rest), " ")
	return interp, strings.Trim(arg, " \t"), interp != ""
}

// envCommand is the command env(1), run as a #! line's interpreter with arg, runs: arg whole
// (the kernel passes it as one argument), or, after -S, its first word that is neither an option
// nor a NAME=VALUE, a PATH= of which replaces *pathList, where env looks it up. "" when interp is
// not env or there is none.
func envCommand(interp, arg string, pathList *string) string {
	if filepath.Base(interp) != "env" {
		return ""
	}
	words := []string{arg}
	if split, ok := strings.CutPrefix(arg, "-S"); ok {
		words = strings.Fields(split)
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-u" || w == "-C" || w == "--unset" || w == "--chdir":
			i++ // its value
		case strings.HasPrefix(w, "-"):
		case strings.Contains(w, "="):
			if v, ok := strings.CutPrefix(w, "PATH="); ok {
				*pathList = v
			}
		default:
			return w
		}
	}
	return ""
}
