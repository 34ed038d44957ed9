package pathtrust

import (
	"debug/elf"
	"errors"
	"fmt"
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
// read so is refused, naming it. A file that is not ELF, or not dynamic, has none. The
// libraries' own dependencies, and the system's (ld.so.cache's), are root's to keep safe.
func loaded(path string) *Problem {
	f, fd, err := openELF(path)
	if err != nil {
		return &Problem{Path: path, ELF: path, Entry: "ELF headers",
			Why: fmt.Sprintf("cannot be read (%v), though the kernel may run it, so what its dynamic loader loads cannot be checked", err)}
	}
	if f == nil {
		return nil
	}
	defer fd.Close()
	d, err := readDynamic(f)
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
	kind, list := "RUNPATH", d.runpath
	if len(list) == 0 {
		kind, list = "RPATH", d.rpath // ld.so ignores DT_RPATH when there is a DT_RUNPATH
	}
	origin := filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		origin = filepath.Dir(real)
	}
	var searched []string
	for _, l := range list {
		for _, entry := range strings.Split(l, ":") {
			dirs, pr := searchedDirs(entry, origin)
			if pr != nil {
				pr.ELF, pr.Entry = path, kind+" "+l
				return pr
			}
			searched = append(searched, dirs...)
		}
	}
	for _, lib := range d.needed {
		if strings.Contains(lib, "/") {
			// ld.so loads this path as it is, its tokens expanded: no search.
			name := expandOrigin(lib, origin)
			if pr := Source(name); pr != nil {
				pr.ELF, pr.Entry = path, "NEEDED "+lib
				return pr
			}
			continue
		}
		for _, dir := range searched {
			file := filepath.Join(dir, lib)
			if _, err := os.Lstat(file); err != nil {
				continue
			}
			if pr := makeable(file); pr != nil {
				pr.ELF, pr.Entry = path, fmt.Sprintf("NEEDED %s, found in %s %s", lib, kind, strings.Join(list, ":"))
				return pr
			}
		}
	}
	return nil
}

// dynamic is what readDynamic reads of an ELF program.
type dynamic struct {
	interp                 string   // PT_INTERP, "" for none
	dynamic                bool     // it has a PT_DYNAMIC
	needed, runpath, rpath []string // DT_NEEDED, DT_RUNPATH, DT_RPATH, in order
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
		case elf.DT_NEEDED, elf.DT_RUNPATH, elf.DT_RPATH:
			entries = append(entries, entry{tag, val})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	if !haveStrtab || strsz > maxStrtab {
		return fmt.Errorf("its dynamic string table (DT_STRTAB, %d bytes) cannot be found", strsz)
	}
	var strs []byte
	for _, l := range f.Progs {
		if l.Type == elf.PT_LOAD && strtab >= l.Vaddr && strtab-l.Vaddr < l.Filesz && strtab-l.Vaddr+strsz <= l.Filesz {
			strs = make([]byte, strsz)
			if _, err := l.ReadAt(strs, int64(strtab-l.Vaddr)); err != nil {
				return fmt.Errorf("reading its dynamic string table: %w", err)
			}
			break
		}
	}
	if strs == nil {
		return fmt.Errorf("its dynamic string table (DT_STRTAB %#x, %d bytes) is in no loaded segment", strtab, strsz)
	}
	for _, e := range entries {
		if e.val >= uint64(len(strs)) {
			return fmt.Errorf("its %v entry points past its string table", e.tag)
		}
		s := string(strs[e.val:])
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		switch e.tag {
		case elf.DT_NEEDED:
			d.needed = append(d.needed, s)
		case elf.DT_RUNPATH:
			d.runpath = append(d.runpath, s)
		case elf.DT_RPATH:
			d.rpath = append(d.rpath, s)
		}
	}
	return nil
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
