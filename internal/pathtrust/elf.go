package pathtrust

import (
	"bytes"
	"debug/elf"
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

// loaded is what another user controls of what the dynamic loader reads for the ELF program at
// path before its code runs, or nil: its PT_INTERP (the loader itself); every directory its
// DT_RUNPATH (or, without one, DT_RPATH) searches for its shared libraries, $ORIGIN being the
// program's own directory, symlinks resolved, as ld.so(8) takes it, with the hardware
// subdirectories ld.so searches first in each (hwcapDirs); each DT_NEEDED library found there,
// the file itself; and a DT_NEEDED naming a path (with a slash), which ld.so loads from there.
// A library another user puts in such a directory (or the directory itself, made where they may
// write) is code run in the program, as its user: root's, for the agent's plugins. A relative
// entry is searched from the program's working directory and counts as another user's. The
// dynamic section is read as ld.so reads it, through the program headers (PT_DYNAMIC): a
// program stripped of its section headers has the same libraries. One whose headers cannot be
// read so is refused, naming it. A file that is not ELF, or not dynamic, has none.
//
// So for every library it loads, each in turn (deps): a library's own RUNPATH (or RPATH, and
// then its loaders' RPATHs, as ld.so searches them) and NEEDED paths are held to the same rule,
// the library being found where ld.so finds it: in those directories, else in the system's
// (ld.so.cache, or the default directories without one), each file found there held to the
// rule too (ldconfig lists whatever directory ld.so.conf names). A trusted library in
// /usr/lib whose RUNPATH names a directory another user may write brings their code as surely
// as the program's own RUNPATH would.
func loaded(path string) *Problem { return loadedWith(path, LoaderEnv{}) }

// LibraryPathEntries is the entries of an LD_LIBRARY_PATH as ld.so reads them: separated by
// colons or semicolons, an empty one ("a::b", "a:;b", ":", a separator first or last) kept, as
// ld.so searches the working directory for it; none of an empty variable, which ld.so reads
// as unset (_dl_init_paths: LD_DEBUG=libs shows no LD_LIBRARY_PATH search).
func LibraryPathEntries(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(v, ";", ":"), ":")
}

// loadedWith is loaded of a program run with env: LD_LIBRARY_PATH's directories ld.so searches
// for each library before a RUNPATH (after an RPATH), and LD_PRELOAD's and LD_AUDIT's libraries
// it loads first, then ldPreload's and the program's DT_AUDIT's and DT_DEPAUDIT's, as the
// program's first needs (found alike, a path's $ORIGIN, $LIB and
// $PLATFORM expanded): each library found so is checked and followed as one a RUNPATH finds. An
// LD_LIBRARY_PATH directory another user controls ($ORIGIN being this program's directory, an
// empty entry the working directory's) is refused, naming it; LD_PRELOAD's and LD_AUDIT's paths
// are the caller's to refuse, naming the variable.
func loadedWith(path string, env LoaderEnv) *Problem {
	f, fd, err := openELF(path)
	if err != nil {
		return &Problem{Path: path, ELF: path, Entry: "ELF headers",
			Why: fmt.Sprintf("cannot be read (%v), though the kernel may run it, so what its dynamic loader loads cannot be checked", err)}
	}
	if f == nil {
		return nil
	}
	d, err := readDynamic(f)
	fd.Close()
	if err != nil {
		return &Problem{Path: path, ELF: path, Entry: "program headers",
			Why: fmt.Sprintf("cannot be read as the dynamic loader reads it (%v), so what it loads cannot be checked", err)}
	}
	if d.interp != "" {
		if pr := makeable(d.interp); pr != nil {
			pr.ELF, pr.Entry = path, "interpreter (PT_INTERP) "+d.interp
			return pr
		}
	}
	if !d.dynamic {
		return nil
	}
	var sysLibs *systemLibs
	var envDirs []string
	if env.LibraryPath != "" {
		// $ORIGIN is this ELF program's directory: for a script, its interpreter's, not the
		// script's, which the caller's check of the variable expands it to.
		exeOrigin := filepath.Dir(realPath(path))
		for _, entry := range LibraryPathEntries(env.LibraryPath) {
			dirs, pr := searchedDirs(entry, exeOrigin)
			if pr != nil {
				pr.ELF, pr.Entry = path, "LD_LIBRARY_PATH entry "+entry
				if entry == "" {
					pr.Entry = "LD_LIBRARY_PATH's empty entry, the working directory,"
				}
				return pr
			}
			envDirs = append(envDirs, dirs...)
		}
	}
	preload := make([]preloaded, 0, len(env.Preload))
	for _, lib := range env.Preload {
		preload = append(preload, preloaded{lib, "LD_PRELOAD"})
	}
	sysPreload, pr := systemPreload(privileged(path))
	if pr != nil {
		pr.ELF, pr.Entry, pr.System = path, ldPreload, true
		return pr
	}
	preload = append(append(preload, sysPreload...), d.audit...)
	queue := []loadedObject{{path: path, d: d, preload: preload}}
	seen := map[string]bool{realPath(path): true}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		deps, pr := o.deps(path, envDirs, &sysLibs)
		if pr != nil {
			return pr
		}
		for _, dep := range deps {
			if seen[realPath(dep.path)] {
				continue
			}
			seen[realPath(dep.path)] = true
			if len(seen) > maxLoaded {
				return &Problem{Path: path, ELF: path, Entry: "libraries",
					Why: fmt.Sprintf("are more than %d, so what its dynamic loader loads cannot be checked", maxLoaded)}
			}
			lf, lfd, err := openELF(dep.path)
			if err != nil {
				return &Problem{Path: dep.path, ELF: path, Entry: "library " + dep.path + " (" + dep.via + ")",
					Why: fmt.Sprintf("has ELF headers that cannot be read (%v), so what the dynamic loader loads for it cannot be checked", err)}
			}
			if lf == nil {
				continue // a linker script or no file: ld.so loads no code of it
			}
			if lf.Class != f.Class || lf.Machine != f.Machine {
				lfd.Close()
				continue // another machine's (ld.so.cache lists each): ld.so skips it
			}
			dep.d, err = readDynamic(lf)
			lfd.Close()
			if err != nil {
				return &Problem{Path: dep.path, ELF: path, Entry: "library " + dep.path + " (" + dep.via + ")",
					Why: fmt.Sprintf("has a dynamic table that cannot be read as the dynamic loader reads it (%v), so what it loads cannot be checked", err)}
			}
			queue = append(queue, dep)
		}
	}
	return nil
}

// maxLoaded bounds the objects loaded follows for one program, far above a real program's
// (a browser's are a few hundred): past it the program is refused, never checked in part.
const maxLoaded = 4096

// loadedObject is an ELF object the dynamic loader loads for a program: the program itself, or
// a library it needs, found through via ("NEEDED libfoo.so of /opt/x/bin/prog"), and the RPATH
// directories of the objects that loaded it, which ld.so searches after its own RPATH when it
// has no RUNPATH.
type loadedObject struct {
	path, via string
	d         dynamic
	inherited []string
	preload   []preloaded // the program's: LD_PRELOAD's and LD_AUDIT's libraries, then ldPreload's and its own DT_AUDIT's, loaded first
	system    bool        // loaded for ldPreload: what it controls is the system's to fix (Problem.System)
}

// preloaded is a library the dynamic loader loads before a program's own: lib as named, and
// from, what names it: "LD_PRELOAD" (LD_PRELOAD's or LD_AUDIT's, whose paths the caller
// checks, naming the variable), ldPreload, or the program's own "AUDIT" or "DEPAUDIT"
// (dynamic.audit); "NEEDED" for a library a loaded object needs, "AUXILIARY" or "FILTER" for
// one it filters (dynamic.filters).
type preloaded struct{ lib, from string }

// realPath is path with its symlinks resolved, or path where it cannot be.
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// deps checks what another user controls of the directories o's RUNPATH or RPATH searches and
// of the libraries o needs (by path, or found in those directories), prog being the program
// whose problem it is, and returns the libraries ld.so loads for o: each NEEDED found first in
// those directories or, failing them, in the system's (*sysLibs, read once a program).
func (o loadedObject) deps(prog string, envDirs []string, sysLibs **systemLibs) ([]loadedObject, *Problem) {
	name := func(entry string) string {
		if o.path == prog {
			return entry
		}
		return fmt.Sprintf("library %s's %s (%s)", o.path, entry, o.via)
	}
	kind, list := "RUNPATH", o.d.runpath
	if len(list) == 0 {
		kind, list = "RPATH", o.d.rpath // ld.so ignores DT_RPATH when there is a DT_RUNPATH
	}
	origin := filepath.Dir(realPath(o.path))
	var searched []string
	for _, l := range list {
		for _, entry := range strings.Split(l, ":") {
			dirs, pr := searchedDirs(entry, origin)
			if pr != nil {
				pr.ELF, pr.Entry, pr.System = prog, name(kind+" "+l), o.system
				return nil, pr
			}
			searched = append(searched, dirs...)
		}
	}
	// Without a RUNPATH, ld.so searches o's RPATH, then its loaders' (inherited); with one, that
	// alone. Either way o's RPATH, if read, is its libraries' loaders'.
	inherited := o.inherited
	if len(o.d.runpath) == 0 {
		inherited = append(slices.Clone(searched), o.inherited...)
		searched = inherited
	}
	// LD_LIBRARY_PATH's directories come after the RPATHs and before a RUNPATH; from says
	// where each directory searched comes from.
	own := kind + " " + strings.Join(list, ":")
	n := 0
	if len(o.d.runpath) == 0 {
		n = len(searched)
	}
	searched = slices.Concat(searched[:n], envDirs, searched[n:])
	from := func(i int) string {
		if i >= n && i < n+len(envDirs) {
			return "LD_LIBRARY_PATH"
		}
		return own
	}
	var deps []loadedObject
	libs := slices.Clone(o.preload)
	for _, lib := range o.d.needed {
		libs = append(libs, preloaded{lib, "NEEDED"})
	}
	libs = append(libs, o.d.filters...)
	for _, l := range libs {
		lib, what, via := l.lib, l.from, fmt.Sprintf("%s %s of %s", l.from, l.lib, o.path)
		system := o.system || l.from == ldPreload
		switch what {
		case "LD_PRELOAD":
			via = "LD_PRELOAD " + lib
		case ldPreload:
			what = ldPreload + "'s library"
			via = what + " " + lib
		}
		if strings.Contains(lib, "/") {
			// ld.so loads this path as it is, its tokens expanded: no search.
			for _, file := range expandTokens(lib, origin) {
				if pr := Source(file); pr != nil {
					if what == "LD_PRELOAD" {
						continue // the caller's to refuse, naming the variable
					}
					pr.System = system
					pr.ELF, pr.Entry = prog, name(what+" "+lib)
					return nil, pr
				}
				deps = append(deps, loadedObject{path: file, via: via, inherited: inherited, system: system})
			}
			continue
		}
		var found []string
		for i, dir := range searched {
			file := filepath.Join(dir, lib)
			if _, err := os.Lstat(file); err != nil {
				continue
			}
			if pr := makeable(file); pr != nil {
				pr.ELF, pr.Entry, pr.System = prog, name(fmt.Sprintf("%s %s, found in %s", what, lib, from(i))), system
				return nil, pr
			}
			if found == nil {
				found = []string{file}
			}
		}
		if found == nil {
			if *sysLibs == nil {
				*sysLibs = readSystemLibs()
			}
			if c := (*sysLibs).untrusted; c != nil {
				// The file that says where ld.so finds the library: what another user writes
				// there points it at their own, after this check or at once.
				pr := *c
				pr.ELF, pr.Entry, pr.System = prog, name(fmt.Sprintf("%s %s, looked up in %s", what, lib, ldCache)), true
				return nil, &pr
			}
			found = (*sysLibs).find(lib)
			for _, file := range found {
				// ld.so.cache lists what ldconfig found, in the directories it was given (ld.so.conf,
				// its includes): a file there another user may write is code of theirs all the same.
				if pr := makeable(file); pr != nil {
					pr.ELF, pr.Entry, pr.System = prog, name(fmt.Sprintf("%s %s, found in the system's libraries", what, lib)), system
					return nil, pr
				}
			}
		}
		for _, file := range found {
			deps = append(deps, loadedObject{path: file, via: via, inherited: inherited, system: system})
		}
	}
	return deps, nil
}

// dynamic is what readDynamic reads of an ELF program.
type dynamic struct {
	interp                 string   // PT_INTERP, "" for none
	dynamic                bool     // it has a PT_DYNAMIC
	needed, runpath, rpath []string // DT_NEEDED, DT_RUNPATH, DT_RPATH, in order
	// audit is the audit libraries its DT_AUDIT and DT_DEPAUDIT name (ld --audit, --depaudit,
	// or --depaudit brought by a library it was linked with), each a colon-separated list as
	// LD_AUDIT is: ld.so loads them into the program it starts (glibc 2.32 and later), as it
	// does LD_AUDIT's, whatever the environment; a library's own are not read.
	audit []preloaded
	// filters is the libraries its DT_AUXILIARY and DT_FILTER name (ld --auxiliary, --filter:
	// a filter's filtees), which ld.so loads for it, found as a NEEDED one is.
	filters []preloaded
}

// Bounds on what readDynamic allocates, far above any real program's: PATH_MAX for the loader's
// name, and for the dynamic table and its string table.
const (
	maxInterp  = 4096
	maxDynamic = 1 << 20
	maxStrtab  = 16 << 20
)

// readDynamic reads f's loader (PT_INTERP) and dynamic table (PT_DYNAMIC) from its program
// headers, as the kernel and ld.so do, never its section headers (which a stripped program may
// lack, or which may say otherwise): the string table is found by DT_STRTAB's address in the
// PT_LOAD segment that maps it.
func readDynamic(f *elf.File) (d dynamic, err error) {
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			if p.Filesz > maxInterp {
				return d, fmt.Errorf("its PT_INTERP is %d bytes, more than a path's %d", p.Filesz, maxInterp)
			}
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return d, fmt.Errorf("reading its PT_INTERP: %w", err)
			}
			d.interp = strings.TrimRight(string(b), "\x00")
		case elf.PT_DYNAMIC:
			if d.dynamic {
				return d, errors.New("it has two PT_DYNAMIC")
			}
			d.dynamic = true
			if err := d.readTable(f, p); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

// readTable reads the dynamic table p holds: its DT_NEEDED, DT_RUNPATH and DT_RPATH strings.
func (d *dynamic) readTable(f *elf.File, p *elf.Prog) error {
	if p.Filesz > maxDynamic {
		return fmt.Errorf("its PT_DYNAMIC is %d bytes", p.Filesz)
	}
	b := make([]byte, p.Filesz)
	if _, err := p.ReadAt(b, 0); err != nil {
		return fmt.Errorf("reading its PT_DYNAMIC: %w", err)
	}
	size := 16
	word := func(b []byte) uint64 { return f.ByteOrder.Uint64(b) }
	if f.Class == elf.ELFCLASS32 {
		size = 8
		word = func(b []byte) uint64 { return uint64(f.ByteOrder.Uint32(b)) }
	}
	type entry struct {
		tag elf.DynTag
		val uint64
	}
	var entries []entry
	var strtab, strsz uint64
	haveStrtab := false
	for i := 0; i+size <= len(b); i += size {
		tag, val := elf.DynTag(int64(word(b[i:]))), word(b[i+size/2:])
		if f.Class == elf.ELFCLASS32 {
			tag = elf.DynTag(int32(uint32(word(b[i:]))))
		}
		switch tag {
		case elf.DT_NULL:
			i = len(b)
			continue
		case elf.DT_STRTAB:
			strtab, haveStrtab = val, true
		case elf.DT_STRSZ:
			strsz = val
		case elf.DT_NEEDED, elf.DT_RUNPATH, elf.DT_RPATH, elf.DT_AUDIT, elf.DT_DEPAUDIT, elf.DT_AUXILIARY, elf.DT_FILTER:
			entries = append(entries, entry{tag, val})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	if !haveStrtab || strsz > maxStrtab {
		return fmt.Errorf("its dynamic string table (DT_STRTAB, %d bytes) cannot be found", strsz)
	}
	var strs *elf.Prog
	for _, l := range f.Progs {
		if l.Type == elf.PT_LOAD && strtab >= l.Vaddr && strtab-l.Vaddr < l.Filesz && strtab-l.Vaddr+strsz <= l.Filesz {
			strs = l
			break
		}
	}
	if strs == nil {
		return fmt.Errorf("its dynamic string table (DT_STRTAB %#x, %d bytes) is in no loaded segment", strtab, strsz)
	}
	// Each string is read alone, not the whole table: a large library's holds megabytes of
	// symbol names, which the loader's few strings are not among.
	for _, e := range entries {
		if e.val >= strsz {
			return fmt.Errorf("its %v entry points past its string table", e.tag)
		}
		s, err := readString(strs, strtab-strs.Vaddr+e.val, strsz-e.val)
		if err != nil {
			return fmt.Errorf("reading its dynamic string table: %w", err)
		}
		switch e.tag {
		case elf.DT_NEEDED:
			d.needed = append(d.needed, s)
		case elf.DT_RUNPATH:
			d.runpath = append(d.runpath, s)
		case elf.DT_RPATH:
			d.rpath = append(d.rpath, s)
		case elf.DT_AUXILIARY:
			d.filters = append(d.filters, preloaded{s, "AUXILIARY"})
		case elf.DT_FILTER:
			d.filters = append(d.filters, preloaded{s, "FILTER"})
		case elf.DT_AUDIT, elf.DT_DEPAUDIT:
			what := map[elf.DynTag]string{elf.DT_AUDIT: "AUDIT", elf.DT_DEPAUDIT: "DEPAUDIT"}[e.tag]
			for _, lib := range strings.Split(s, ":") {
				if lib != "" {
					d.audit = append(d.audit, preloaded{lib, what})
				}
			}
		}
	}
	return nil
}

// readString is the NUL-terminated string at off in p, of at most max bytes (to the end of
// its table; without a NUL there, all of them), read a page at a time.
func readString(p *elf.Prog, off, max uint64) (string, error) {
	var out []byte
	buf := make([]byte, 4096)
	for uint64(len(out)) < max {
		n := min(uint64(len(buf)), max-uint64(len(out)))
		if _, err := p.ReadAt(buf[:n], int64(off)+int64(len(out))); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:n]...)
	}
	return string(out), nil
}

// openELF reads the file at path as ELF: nil when it is not one (a script), is not a regular
// file (a named pipe is not waited on), cannot be read, or is shorter than an ELF file header
// (the kernel runs none of these as ELF); an error when it has ELF's whole file header
// but its other headers cannot be read (section headers past the end of the file: the kernel
// reads none of them, and runs it); else the file and fd, left open for the sections it reads
// later: the caller closes fd.
func openELF(path string) (f *elf.File, fd *os.File, err error) {
	fd, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, nil
	}
	magic := make([]byte, len(elf.ELFMAG))
	if fi, err := fd.Stat(); err != nil || !fi.Mode().IsRegular() {
		fd.Close()
		return nil, nil, nil
	}
	if _, err := fd.ReadAt(magic, 0); err != nil || string(magic) != elf.ELFMAG {
		fd.Close()
		return nil, nil, nil
	}
	if f, err = elf.NewFile(fd); err != nil {
		defer fd.Close()
		// Shorter than its own file header, it is no program the kernel runs (ENOEXEC).
		hdr := make([]byte, elf.EI_CLASS+1)
		if _, rerr := fd.ReadAt(hdr, 0); rerr != nil {
			return nil, nil, nil
		}
		size := map[elf.Class]int64{elf.ELFCLASS32: 52, elf.ELFCLASS64: 64}[elf.Class(hdr[elf.EI_CLASS])]
		if fi, serr := fd.Stat(); serr != nil || size == 0 || fi.Size() < size {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	return f, fd, nil
}

// LibraryDir is what another user controls of the directory a RUNPATH, RPATH or LD_LIBRARY_PATH
// entry names, its tokens expanded as ld.so expands them, or nil (searchedDirs): origin is the
// program's directory ($ORIGIN).
func LibraryDir(entry, origin string) *Problem { return searchedDir(entry, origin) }

// searchedDir is what another user controls of the directory a RUNPATH or RPATH entry names, or
// nil (searchedDirs).
func searchedDir(entry, origin string) *Problem {
	_, pr := searchedDirs(entry, origin)
	return pr
}

// searchedDirs is the directories ld.so searches for a RUNPATH or RPATH entry, with what another
// user controls of them, or nil: $ORIGIN (or ${ORIGIN}) is origin; $LIB and $PLATFORM, which
// ld.so expands to a name of its own choosing, are each name it may choose (libNames,
// platformNames), so that whichever it picks is checked, and nothing else beside it. Each
// directory found brings the hardware subdirectories ld.so searches before it (hwcapDirs). An
// empty or relative entry is the program's working directory's, wherever it runs.
func searchedDirs(entry, origin string) ([]string, *Problem) {
	entry = expandOrigin(entry, origin)
	if !filepath.IsAbs(entry) {
		return nil, Source(entry)
	}
	dirs := expandTokens(entry, origin)
	var all []string
	for _, dir := range dirs {
		if pr := Source(dir); pr != nil {
			return nil, pr
		}
		sub, pr := hwcapDirs(dir)
		if pr != nil {
			return nil, pr
		}
		all = append(append(all, sub...), dir)
	}
	return all, nil
}

// expandTokens is the names ld.so may make of name, a RUNPATH entry or a library's path:
// $ORIGIN (or ${ORIGIN}) is origin; $LIB and $PLATFORM (braced or not), which ld.so expands to a
// name of its own choosing, each name it may choose (libNames, platformNames), cleaned, each
// once.
func expandTokens(name, origin string) []string {
	names := []string{expandOrigin(name, origin)}
	for _, tok := range []struct {
		names []string
		forms []string
	}{{libNames(), []string{"${LIB}", "$LIB"}}, {platformNames(), []string{"${PLATFORM}", "$PLATFORM"}}} {
		var expanded []string
		for _, d := range names {
			if !strings.Contains(d, tok.forms[0]) && !strings.Contains(d, tok.forms[1]) {
				expanded = append(expanded, d)
				continue
			}
			for _, n := range tok.names {
				e := d
				for _, f := range tok.forms {
					e = strings.ReplaceAll(e, f, n)
				}
				expanded = append(expanded, e)
			}
		}
		names = expanded
	}
	for i := range names {
		if filepath.IsAbs(names[i]) {
			names[i] = filepath.Clean(names[i])
		}
	}
	return slices.Compact(names)
}

// libNames is the names ld.so may give $LIB: the library directories distributions lay out
// (lib, lib64, lib32, libx32), lib/ and the multiarch one (Debian's lib/x86_64-linux-gnu) named by the machine.
func libNames() []string {
	names := []string{"lib", "lib64", "lib32", "libx32"}
	m := machine()
	triplets := map[string][]string{
		"x86_64": {"x86_64-linux-gnu", "i386-linux-gnu", "x86_64-linux-gnux32"},
		"i686":   {"i386-linux-gnu"}, "i586": {"i386-linux-gnu"}, "i386": {"i386-linux-gnu"},
		"aarch64": {"aarch64-linux-gnu", "arm-linux-gnueabihf"},
		"armv7l":  {"arm-linux-gnueabihf", "arm-linux-gnueabi"},
		"ppc64le": {"powerpc64le-linux-gnu"}, "ppc64": {"powerpc64-linux-gnu"},
		"riscv64": {"riscv64-linux-gnu"}, "loongarch64": {"loongarch64-linux-gnu"},
	}[m]
	if m != "" {
		triplets = append(triplets, m+"-linux-gnu")
	}
	for _, t := range triplets {
		names = append(names, "lib/"+t)
	}
	return slices.Compact(names)
}

// platformNames is the names ld.so may give $PLATFORM (the kernel's AT_PLATFORM, or glibc's
// own choice on x86: haswell, xeon_phi): the machine's (uname -m) and the legacy hardware names.
func platformNames() []string {
	names := []string{machine()}
	for _, n := range legacyHwcaps {
		if n != "tls" && n != names[0] {
			names = append(names, n)
		}
	}
	return names
}

// machine is uname -m's machine name, or "" where uname fails.
func machine() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Machine[:])
}

// LoaderNames is the paths ld.so may load for a library named by its path in LD_PRELOAD or
// LD_AUDIT: $ORIGIN is origin, the program's directory, and $LIB and $PLATFORM each name ld.so
// may give them (expandTokens), so that whichever it picks is checked.
func LoaderNames(name, origin string) []string { return expandTokens(name, origin) }

// expandOrigin is name with $ORIGIN and ${ORIGIN} replaced by origin.
func expandOrigin(name, origin string) string {
	for _, o := range []string{"$ORIGIN", "${ORIGIN}"} {
		name = strings.ReplaceAll(name, o, origin)
	}
	return name
}

// legacyHwcaps is the names of the legacy hardware subdirectories glibc's ld.so searches below
// each library directory, nested in any order ("tls/haswell/avx512_1/x86_64", as LD_DEBUG=libs
// lists them and `ld.so --help` names them), the machine's own name (uname -m) added.
var legacyHwcaps = []string{"tls", "haswell", "xeon_phi", "avx512_1", "x86_64", "i686", "i586", "i486", "aarch64", "v7l", "v8l", "power9", "power10", "z13", "z14", "z15"}

// hwcapDirs is the subdirectories of dir ld.so searches for a library before dir itself:
// glibc-hwcaps/NAME for any NAME there (x86-64-v2 to v4, power10, ...), and the legacy ones
// (legacyHwcaps, up to four deep), those that exist; with what another user controls of them,
// or nil. One not there is dir's to keep from being made, which Source checked.
func hwcapDirs(dir string) ([]string, *Problem) {
	var found []string
	add := func(sub string) *Problem {
		if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
			return nil
		}
		if pr := makeable(sub); pr != nil {
			return pr
		}
		found = append(found, sub)
		return nil
	}
	glibc := filepath.Join(dir, "glibc-hwcaps")
	if err := add(glibc); err != nil {
		return nil, err
	}
	if len(found) > 0 {
		names, _ := os.ReadDir(glibc)
		for _, n := range names {
			if pr := add(filepath.Join(glibc, n.Name())); pr != nil {
				return nil, pr
			}
		}
	}
	names := legacyHwcaps
	if m := machine(); m != "" {
		names = append(names[:len(names):len(names)], m)
	}
	var walk func(d string, depth int) *Problem
	walk = func(d string, depth int) *Problem {
		if depth == 4 {
			return nil
		}
		for _, n := range names {
			sub := filepath.Join(d, n)
			before := len(found)
			if pr := add(sub); pr != nil {
				return pr
			}
			if len(found) > before {
				if pr := walk(sub, depth+1); pr != nil {
					return pr
				}
			}
		}
		return nil
	}
	if pr := walk(dir, 0); pr != nil {
		return nil, pr
	}
	return found, nil
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

// ldPreload is the file of libraries glibc's dynamic loader loads into every dynamic program it
// starts, after LD_PRELOAD's and before the program's own; a test points it elsewhere.
var ldPreload = "/etc/ld.so.preload"

// maxLdPreload bounds what is read of ldPreload, far above a real one (a line or two).
const maxLdPreload = 1 << 20

// systemPreload is the libraries ldPreload names, as ld.so reads it (names separated by white
// space or colons, a '#' making the rest of its line a comment), each from ldPreload; with what
// another user controls of the file itself, or of /etc where it is not made yet, or nil. What
// is not a regular file names none (ld.so maps the file's size, none). One this user is not
// allowed to read names none for a program run as this user (the plugin is: ld.so in it is
// refused the file as well, and loads nothing from it); for a privileged one (setuid, setgid,
// or given capabilities: privileged), whose ld.so may read it, it is refused, as one that
// cannot be read for another reason is. What the libraries are, and load, is
// loadedObject.deps's to check, as it does LD_PRELOAD's.
func systemPreload(privileged bool) ([]preloaded, *Problem) {
	if pr := makeable(ldPreload); pr != nil {
		return nil, pr
	}
	f, err := os.OpenFile(ldPreload, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) || (errors.Is(err, fs.ErrPermission) && !privileged) {
		return nil, nil
	}
	if err != nil {
		return nil, &Problem{Path: ldPreload, Why: fmt.Sprintf("cannot be read (%v), so the libraries it has loaded cannot be checked", err)}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxLdPreload+1))
	if err != nil || len(b) > maxLdPreload {
		why := fmt.Sprintf("is more than %d bytes", maxLdPreload)
		if err != nil {
			why = fmt.Sprintf("cannot be read (%v)", err)
		}
		return nil, &Problem{Path: ldPreload, Why: why + ", so the libraries it has loaded cannot be checked"}
	}
	var libs []preloaded
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, lib := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ':' }) {
			libs = append(libs, preloaded{lib, ldPreload})
		}
	}
	return libs, nil
}

// privileged says whether the program at path runs with more than its caller's privileges:
// setuid, setgid, or with file capabilities (security.capability); true when that cannot be
// told.
func privileged(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true
	}
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		return true
	}
	_, err = unix.Getxattr(path, "security.capability", nil)
	return !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP)
}

// ldCache is where the dynamic loader's cache of the system's libraries is; a test points it
// elsewhere.
var ldCache = "/etc/ld.so.cache"

// maxLdCache bounds what is read of ldCache, far above a real one (tens of kilobytes).
const maxLdCache = 16 << 20

// systemLibs is where ld.so finds a library that no RUNPATH or RPATH holds: ld.so.cache's
// entries by name, else (no cache, or one in a format not read here) the default directories.
type systemLibs struct {
	cache map[string][]string // nil: no cache read
	// untrusted is what another user controls of ldCache (makeable: the file, a directory on
	// the way, or where it is missing, the directory they could make it in), or nil: ld.so
	// reads it at each start, so a cache they may write points it at their library whatever
	// it said when it was checked.
	untrusted *Problem
}

// readSystemLibs reads ldCache (glibc's "glibc-ld.so.cache1.1" format, the only one glibc 2.32
// and later writes): a cache that cannot be read leaves the default directories.
func readSystemLibs() *systemLibs {
	sys := &systemLibs{untrusted: makeable(ldCache)}
	f, err := os.Open(ldCache)
	if err != nil {
		return sys
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLdCache))
	if err != nil {
		return sys
	}
	const magic = "glibc-ld.so.cache1.1"
	const header, entry = len(magic) + 28, 24
	if len(b) < header || string(b[:len(magic)]) != magic {
		return sys
	}
	order := binary.ByteOrder(binary.LittleEndian)
	if b[len(magic)+8] == 3 { // flags: cache_file_new_flags_endian_big
		order = binary.BigEndian
	}
	n := int(order.Uint32(b[len(magic):]))
	if n < 0 || n > (len(b)-header)/entry {
		return sys
	}
	str := func(off uint32) (string, bool) {
		if int64(off) >= int64(len(b)) {
			return "", false
		}
		s := b[off:]
		i := bytes.IndexByte(s, 0)
		if i < 0 {
			return "", false
		}
		return string(s[:i]), true
	}
	sys.cache = map[string][]string{}
	for i := range n {
		e := b[header+i*entry:]
		key, ok1 := str(order.Uint32(e[4:]))
		value, ok2 := str(order.Uint32(e[8:]))
		if ok1 && ok2 && filepath.IsAbs(value) {
			sys.cache[key] = append(sys.cache[key], value)
		}
	}
	return sys
}

// find is the paths where ld.so may find the library name in the system's libraries, none
// where it finds none: ld.so.cache's entries of that name (each machine's and hardware level's:
// the caller skips another machine's), else the first default directory that has it.
func (sys *systemLibs) find(name string) []string {
	if paths := sys.cache[name]; len(paths) > 0 {
		return paths
	}
	for _, lib := range libNames() {
		for _, dir := range []string{"/" + lib, "/usr/" + lib} {
			file := filepath.Join(dir, name)
			if _, err := os.Stat(file); err == nil {
				return []string{file}
			}
		}
	}
	return nil
}
