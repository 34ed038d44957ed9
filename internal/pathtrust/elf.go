package pathtrust

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// loaded is what another user controls of what the dynamic loader reads for the ELF program at
// path before its code runs, or nil: its PT_INTERP (the loader itself), and every directory its
// DT_RUNPATH (or, without one, DT_RPATH) searches for its shared libraries, $ORIGIN being the
// program's own directory, symlinks resolved, as ld.so(8) takes it. A library another user puts
// in such a directory (or the directory itself, made where they may write) is code run in the
// program, as its user: root's, for the agent's plugins. A relative entry is searched from the
// program's working directory and counts as another user's. A file that is not ELF, or not
// dynamic, has none. The libraries found there are the directories' to keep safe; the system's
// (ld.so.cache's) are root's.
func loaded(path string) *Problem {
	f, fd := openELF(path)
	if f == nil {
		return nil
	}
	defer fd.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil
		}
		interp := strings.TrimRight(string(b), "\x00")
		if pr := makeable(interp); pr != nil {
			pr.ELF, pr.Entry = path, "interpreter (PT_INTERP) "+interp
			return pr
		}
	}
	kind := "RUNPATH"
	list, err := f.DynString(elf.DT_RUNPATH)
	if err == nil && len(list) == 0 {
		kind = "RPATH" // ld.so ignores DT_RPATH when there is a DT_RUNPATH
		list, err = f.DynString(elf.DT_RPATH)
	}
	if err != nil {
		return nil // not dynamic: no section to read
	}
	origin := filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		origin = filepath.Dir(real)
	}
	for _, l := range list {
		for _, entry := range strings.Split(l, ":") {
			if pr := searchedDir(entry, origin); pr != nil {
				pr.ELF, pr.Entry = path, kind+" "+l
				return pr
			}
		}
	}
	return nil
}

// openELF reads the file at path as ELF: nil when it is not one (a script), is not a regular
// file (a named pipe is not waited on), or cannot be read; else the file and fd, left open for
// the sections it reads later: the caller closes fd.
func openELF(path string) (f *elf.File, fd *os.File) {
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	magic := make([]byte, len(elf.ELFMAG))
	if fi, err := fd.Stat(); err != nil || !fi.Mode().IsRegular() {
		fd.Close()
		return nil, nil
	}
	if _, err := fd.ReadAt(magic, 0); err != nil || string(magic) != elf.ELFMAG {
		fd.Close()
		return nil, nil
	}
	if f, err = elf.NewFile(fd); err != nil {
		fd.Close()
		return nil, nil
	}
	return f, fd
}

// searchedDir is what another user controls of the directory a RUNPATH or RPATH entry names, or
// nil: $ORIGIN (or ${ORIGIN}) is origin; $LIB and $PLATFORM, which ld.so expands to a name of
// its own choosing (lib64, x86_64), are every name there is in their place, and the directory
// they are in, so that whichever ld.so picks is checked. An empty or relative entry is the
// program's working directory's, wherever it runs.
func searchedDir(entry, origin string) *Problem {
	for _, o := range []string{"$ORIGIN", "${ORIGIN}"} {
		entry = strings.ReplaceAll(entry, o, origin)
	}
	if !filepath.IsAbs(entry) {
		return Source(entry)
	}
	dirs := []string{filepath.Clean(entry)}
	pattern := entry
	for _, tok := range []string{"${LIB}", "$LIB", "${PLATFORM}", "$PLATFORM"} {
		pattern = strings.ReplaceAll(pattern, tok, "*")
	}
	if i := strings.Index(pattern, "*"); i >= 0 && pattern != entry {
		// The directory the first token names an entry of: a name another user makes there
		// is one ld.so may pick.
		dirs = []string{filepath.Dir(pattern[:i] + "x")}
		matches, _ := filepath.Glob(pattern)
		dirs = append(dirs, matches...)
	}
	for _, dir := range dirs {
		if pr := Source(dir); pr != nil {
			return pr
		}
	}
	return nil
}

// Source is what another user controls of a file or directory a program loads code or reads
// its settings from by this name (a shared library, a directory of them), or nil: the file, a
// directory on the way, or, not made yet, the directory they could make it in (the rule for a
// PATH directory); a relative name ("" is ".") is whatever directory the program runs in.
func Source(name string) *Problem {
	if !filepath.IsAbs(name) {
		if name == "" {
			name = "."
		}
		return &Problem{Path: name, Why: "is relative: it is searched from whatever directory the program runs in"}
	}
	return makeable(filepath.Clean(name))
}
