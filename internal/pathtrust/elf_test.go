package pathtrust

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A RUNPATH entry's $ORIGIN is the program's directory; $LIB and $PLATFORM, which ld.so
// expands to a name of its own, stand for each name ld.so may pick (lib64, the multiarch
// lib/x86_64-linux-gnu; the machine's), so the one it picks is checked whichever it is, and no
// other directory beside it; another $WORD is a name like any other.
func TestSearchedDirExpandsTheLoadersTokens(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	origin := dir("opt/bin", 0o755)
	dir("opt/lib", 0o755)
	dir("opt/arch/lib64", 0o755)
	dir("opt/arch/x86_64", 0o777) // a $PLATFORM name, never $LIB's
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	m := unix.ByteSliceToString(u.Machine[:])
	multiarch := map[string]string{"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}[m]
	if multiarch == "" {
		t.Skipf("this test knows the multiarch directory of x86_64 and aarch64, not of %q", m)
	}
	dir("opt/multi/lib/"+multiarch, 0o777)
	dir("opt/open", 0o777)
	dir("opt/$FOO", 0o755)
	// An app in /opt whose RUNPATH is $ORIGIN/../$LIB, beside a scratch directory of its own
	// others may write: not one ld.so searches.
	app := dir("app/bin", 0o755)
	dir("app/lib", 0o755)
	dir("app/var/tmp", 0o777|os.ModeSticky)
	for _, tt := range []struct {
		entry, bad string // bad: the Path of the Problem, "" for none
	}{
		{"$ORIGIN/../lib", ""},
		{"${ORIGIN}/../open", filepath.Join(base, "opt/open")},
		{filepath.Join(base, "opt/arch/$LIB"), ""},
		{filepath.Join(base, "opt/multi/$LIB"), filepath.Join(base, "opt/multi/lib", multiarch)},
		{filepath.Join(base, "opt/arch/${PLATFORM}"), filepath.Join(base, "opt/arch/x86_64")},
		{filepath.Join(base, "opt/open/${PLATFORM}"), filepath.Join(base, "opt/open")},
		{filepath.Join(base, "opt/$FOO"), ""},
		{"$ORIGIN/../$LIB", ""}, // from app/bin
		{"lib", "lib"},
		{"", "."},
	} {
		pr := searchedDir(tt.entry, origin)
		if strings.HasPrefix(tt.entry, "$ORIGIN/../$LIB") {
			pr = searchedDir(tt.entry, app)
		}
		switch {
		case tt.bad == "" && pr != nil:
			t.Errorf("searchedDir(%q) = %s %s, want nothing held against it", tt.entry, pr.Path, pr.Why)
		case tt.bad != "" && (pr == nil || pr.Path != tt.bad):
			t.Errorf("searchedDir(%q) = %+v, want %s named", tt.entry, pr, tt.bad)
		case pr != nil && !strings.Contains(pr.Why, "writable by other users") && !strings.Contains(pr.Why, "relative"):
			t.Errorf("searchedDir(%q): %s %s, want why another user controls it", tt.entry, pr.Path, pr.Why)
		}
	}
}

// cc builds source into out with args, or skips the test without a C compiler.
func cc(t *testing.T, out, source string, args ...string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("building a program with the dynamic section this test needs takes a C compiler (cc): %v", err)
	}
	src := filepath.Join(t.TempDir(), "src.c")
	if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(cc, append([]string{"-o", out, src}, args...)...).CombinedOutput(); err != nil {
		t.Skipf("cc %v: %v: %s", args, err, b)
	}
}

// writeLdCache writes an ld.so.cache in glibc's format (glibc-ld.so.cache1.1, little-endian)
// that lists each library name at its path.
func writeLdCache(t *testing.T, path string, libs map[string]string) {
	t.Helper()
	const magic = "glibc-ld.so.cache1.1"
	header := len(magic) + 28
	strs := header + 24*len(libs)
	var table, strtab []byte
	for name, lib := range libs {
		e := make([]byte, 24)
		binary.LittleEndian.PutUint32(e[0:], 0x0303) // libc6, x86-64
		binary.LittleEndian.PutUint32(e[4:], uint32(strs+len(strtab)))
		strtab = append(append(strtab, name...), 0)
		binary.LittleEndian.PutUint32(e[8:], uint32(strs+len(strtab)))
		strtab = append(append(strtab, lib...), 0)
		table = append(table, e...)
	}
	h := make([]byte, header)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[len(magic):], uint32(len(libs)))
	binary.LittleEndian.PutUint32(h[len(magic)+4:], uint32(len(strtab)))
	h[len(magic)+8] = 2 // little-endian
	if err := os.WriteFile(path, append(append(h, table...), strtab...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A program's libraries are code it runs, and so are theirs: ld.so searches a library's own
// RUNPATH for the libraries it needs, and loads the ones it names by path. One found in the
// system's directories (through ld.so.cache, root's) whose RUNPATH names a directory another
// user may write brings their library into the program as surely as the program's own RUNPATH
// would. Before, only the program's own RUNPATH and NEEDED were read: it ran. Now it is
// refused, naming the library, the entry and the directory; a library whose RUNPATH is
// root's, found the same way, is none.
func TestLoadedFollowsTheSystemsLibrariesRUNPATH(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(base, "usr-lib")
	open := filepath.Join(base, "open")
	safe := filepath.Join(base, "safe")
	for _, d := range []string{sys, open, safe} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	const lib = "int volctl_test_lib(void) { return 0; }\n"
	const prog = "int volctl_test_lib(void);\nint main(void) { return volctl_test_lib(); }\n"
	cc(t, filepath.Join(sys, "libvtbad.so"), lib, "-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,"+open)
	cc(t, filepath.Join(sys, "libvtgood.so"), lib, "-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,"+safe)
	bad, good := filepath.Join(base, "bad"), filepath.Join(base, "good")
	cc(t, bad, prog, "-L"+sys, "-lvtbad")
	cc(t, good, prog, "-L"+sys, "-lvtgood")
	cache := filepath.Join(base, "ld.so.cache")
	writeLdCache(t, cache, map[string]string{"libvtbad.so": filepath.Join(sys, "libvtbad.so"), "libvtgood.so": filepath.Join(sys, "libvtgood.so")})
	old := ldCache
	ldCache = cache
	t.Cleanup(func() { ldCache = old })
	pr := loaded(bad)
	if pr == nil {
		t.Fatalf("loaded(%s) = nil: the library ld.so.cache finds for it, %s, has a RUNPATH %s any user may write; want it named", bad, filepath.Join(sys, "libvtbad.so"), open)
	}
	for _, want := range []string{"library " + filepath.Join(sys, "libvtbad.so") + "'s RUNPATH " + open, "NEEDED libvtbad.so of " + bad} {
		if !strings.Contains(pr.Entry, want) {
			t.Errorf("loaded(%s).Entry = %q, want it to say %q", bad, pr.Entry, want)
		}
	}
	if pr.Path != open || pr.ELF != bad || !strings.Contains(pr.Why, "writable by other users") {
		t.Errorf("loaded(%s) = %+v, want %s named writable by other users, in %s", bad, *pr, open, bad)
	}
	if pr := loaded(good); pr != nil {
		t.Errorf("loaded(%s) = %+v, want nothing held against it: its library's RUNPATH %s is root's", good, *pr, safe)
	}
}

// ld.so.cache lists what ldconfig found in the directories ld.so.conf names, whoever may write
// them: a library the cache finds in a directory another user may write is their code in the
// program. Before, a library found through the cache (or the default directories) was followed
// but never itself checked: the program passed. Now it is refused, naming the NEEDED entry.
func TestLoadedChecksALibraryFoundInTheSystemsLibraries(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	const lib = "int volctl_test_lib(void) { return 0; }\n"
	const prog = "int volctl_test_lib(void);\nint main(void) { return volctl_test_lib(); }\n"
	cc(t, filepath.Join(open, "libvtopen.so"), lib, "-shared", "-fPIC")
	bad := filepath.Join(base, "bad")
	cc(t, bad, prog, "-L"+open, "-lvtopen")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(base, "ld.so.cache")
	writeLdCache(t, cache, map[string]string{"libvtopen.so": filepath.Join(open, "libvtopen.so")})
	old := ldCache
	ldCache = cache
	t.Cleanup(func() { ldCache = old })
	pr := loaded(bad)
	if pr == nil {
		t.Fatalf("loaded(%s) = nil: ld.so.cache finds its library in %s, which any user may write; want it named", bad, open)
	}
	if want := "NEEDED libvtopen.so, found in the system's libraries"; pr.Entry != want || pr.Path != open || pr.ELF != bad || !strings.Contains(pr.Why, "writable by other users") {
		t.Errorf("loaded(%s) = %+v, want %s named writable by other users, Entry %q", bad, *pr, open, want)
	}
}

// The system's own programs, each with the libraries it loads and theirs, are root's: none is
// refused (the check follows every library's RUNPATH and NEEDED, and a false refusal would
// keep a plugin from starting).
func TestSystemProgramsLoadOnlyRootsLibraries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the system's programs are root's: as another user, each would be refused")
	}
	n := 0
	for _, dir := range []string{"/usr/bin", "/usr/sbin"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			n++
			if pr := loaded(p); pr != nil {
				t.Errorf("loaded(%s) = %+v, want nothing held against a program of the system's", p, *pr)
			}
		}
	}
	if n == 0 {
		t.Skip("no programs in /usr/bin or /usr/sbin")
	}
}

// BenchmarkLoaded is the ELF check of a plugin's program at each start: every library it
// loads, and theirs, read through their program headers.
func BenchmarkLoaded(b *testing.B) {
	for _, prog := range []string{"/usr/bin/git", "/usr/bin/python3", "/usr/bin/mount"} {
		if _, err := os.Stat(prog); err != nil {
			continue
		}
		b.Run(filepath.Base(prog), func(b *testing.B) {
			for range b.N {
				if pr := loaded(prog); pr != nil {
					b.Fatalf("%+v", *pr)
				}
			}
		})
	}
}

// useLdCache points ldCache at path for the test.
func useLdCache(t *testing.T, path string) {
	t.Helper()
	old := ldCache
	ldCache = path
	t.Cleanup(func() { ldCache = old })
}

// libIn builds the library name from source in a directory only this user may write (safe)
// and in one any user may (open), which the system's libraries (a test ld.so.cache) find it in,
// with no ld.so.preload; base holds both.
func libIn(t *testing.T, name, source string) (base, safe, open string) {
	t.Helper()
	base = t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	safe, open = mkdirMode(t, filepath.Join(base, "safe"), 0o755), mkdirMode(t, filepath.Join(base, "open"), 0o755)
	cc(t, filepath.Join(open, name), source, "-shared", "-fPIC")
	cc(t, filepath.Join(safe, name), source, "-shared", "-fPIC")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	preloadFile(t, filepath.Join(base, "no-ld.so.preload"))
	cache := filepath.Join(base, "ld.so.cache")
	writeLdCache(t, cache, map[string]string{name: filepath.Join(open, name)})
	useLdCache(t, cache)
	return base, safe, open
}

// preloadFile points ldPreload at path for the test.
func preloadFile(t *testing.T, path string) {
	t.Helper()
	old := ldPreload
	ldPreload = path
	t.Cleanup(func() { ldPreload = old })
}

// glibc's ld.so loads the libraries /etc/ld.so.preload names into every dynamic program it
// starts, before the program's own: a preload file another user may write, or may make where it
// is missing, or a library it names (by path, or by a name found in a directory they may write),
// or what such a library loads in turn, is their code run in every root plugin. Before, the file
// was never read and each such program passed. Now each is refused, naming the file or the
// library it names (System set: the fix is the system's, not the program's); names are
// separated by white space or colons, and a '#' comments the rest of its line, as ld.so reads it.
func TestLoadedHoldsTheSystemsPreloadFileToTheRule(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	etc, open, safe := mkdirMode(t, filepath.Join(base, "etc"), 0o755), mkdirMode(t, filepath.Join(base, "open"), 0o755), mkdirMode(t, filepath.Join(base, "safe"), 0o755)
	const lib = "int volctl_test_hook(void) { return 0; }\n"
	cc(t, filepath.Join(open, "libvthook.so"), lib, "-shared", "-fPIC")
	cc(t, filepath.Join(safe, "libvtok.so"), lib, "-shared", "-fPIC")
	cc(t, filepath.Join(safe, "libvtrunpath.so"), lib, "-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,"+open)
	cc(t, filepath.Join(safe, "libvtneeds.so"), lib+"int volctl_test_hook2(void) { return 0; }\n", "-shared", "-fPIC", "-Wl,--no-as-needed", "-L"+open, "-lvthook")
	prog := filepath.Join(base, "prog")
	cc(t, prog, "int main(void) { return 0; }\n")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(base, "ld.so.cache")
	writeLdCache(t, cache, map[string]string{"libvthook.so": filepath.Join(open, "libvthook.so")})
	useLdCache(t, cache)

	preload := filepath.Join(etc, "ld.so.preload")
	for _, tt := range []struct {
		name, content string
		mode          os.FileMode
		bad           string // the Problem's Path, "" for none
		entry         string // what its Entry says
	}{
		{"none", "", 0, "", ""},
		{"root's, naming a root library", filepath.Join(safe, "libvtok.so") + "\n", 0o644, "", ""},
		{"a comment", "# " + filepath.Join(open, "libvthook.so") + "\n" + filepath.Join(safe, "libvtok.so") + " #" + filepath.Join(open, "libvthook.so"), 0o644, "", ""},
		{"any user may write it", "", 0o666, preload, preload},
		{"a library in a directory any user may write", filepath.Join(open, "libvthook.so") + "\n", 0o644, open, preload + "'s library " + filepath.Join(open, "libvthook.so")},
		{"after a colon", filepath.Join(safe, "libvtok.so") + ":" + filepath.Join(open, "libvthook.so"), 0o644, open, preload + "'s library " + filepath.Join(open, "libvthook.so")},
		{"after a tab, missing where any user may make it", filepath.Join(safe, "libvtok.so") + "\t" + filepath.Join(open, "libvtmissing.so"), 0o644, open, "libvtmissing.so"},
		{"a bare name found in the system's libraries", "libvthook.so", 0o644, open, preload + "'s library libvthook.so, found in the system's libraries"},
		{"a root library whose RUNPATH any user may write", filepath.Join(safe, "libvtrunpath.so"), 0o644, open, "RUNPATH " + open},
		{"a root library that needs one any user may write", filepath.Join(safe, "libvtneeds.so"), 0o644, open, "libvthook.so"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			preloadFile(t, preload)
			os.Remove(preload)
			if tt.mode != 0 {
				if err := os.WriteFile(preload, []byte(tt.content), tt.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(preload, tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			pr := loaded(prog)
			if tt.bad == "" {
				if pr != nil {
					t.Fatalf("loaded(%s) with %s holding %q = %+v, want nothing held against it", prog, preload, tt.content, *pr)
				}
				return
			}
			if pr == nil {
				t.Fatalf("loaded(%s) = nil with %s (mode %#o) holding %q: want %s named", prog, preload, tt.mode, tt.content, tt.bad)
			}
			if pr.Path != tt.bad || pr.ELF != prog || !pr.System || !strings.Contains(pr.Entry, tt.entry) {
				t.Errorf("loaded(%s) = %+v, want Path %s, System, and an Entry that says %q", prog, *pr, tt.bad, tt.entry)
			}
		})
	}

	// Missing in a directory another user may write, they could make it.
	preloadFile(t, filepath.Join(open, "ld.so.preload"))
	if pr := loaded(prog); pr == nil || pr.Path != open || pr.Entry != filepath.Join(open, "ld.so.preload") || !pr.System {
		t.Errorf("loaded(%s) = %+v with the preload file missing in %s, which any user may write: want it named", prog, pr, open)
	}
}

// ld.so reads ld.so.cache at each start to find the libraries no RUNPATH holds: a cache another
// user may write (or make, where it is missing) sends it to their library whatever the cache
// said when the program was checked. Before, the cache was read and trusted: a program whose
// libraries it listed in root's directories passed, and the cache could be rewritten the next
// moment. Now the program is refused, naming the cache (System set).
func TestLoadedHoldsTheSystemsLibraryCacheToTheRule(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	etc, safe, open := mkdirMode(t, filepath.Join(base, "etc"), 0o755), mkdirMode(t, filepath.Join(base, "safe"), 0o755), mkdirMode(t, filepath.Join(base, "open"), 0o777)
	cc(t, filepath.Join(safe, "libvtok.so"), "int volctl_test_lib(void) { return 0; }\n", "-shared", "-fPIC")
	prog := filepath.Join(base, "prog")
	cc(t, prog, "int volctl_test_lib(void);\nint main(void) { return volctl_test_lib(); }\n", "-L"+safe, "-lvtok")
	preloadFile(t, filepath.Join(etc, "ld.so.preload")) // none: the cache's test alone
	for _, tt := range []struct {
		name  string
		cache string
		mode  os.FileMode
		bad   string
	}{
		{"root's", filepath.Join(etc, "ld.so.cache"), 0o644, ""},
		{"any user may write it", filepath.Join(etc, "ld.so.cache"), 0o666, filepath.Join(etc, "ld.so.cache")},
		{"in a directory any user may write", filepath.Join(open, "ld.so.cache"), 0o644, open},
		{"missing where any user may make it", filepath.Join(open, "missing.cache"), 0, open},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mode != 0 {
				writeLdCache(t, tt.cache, map[string]string{"libvtok.so": filepath.Join(safe, "libvtok.so")})
				if err := os.Chmod(tt.cache, tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			useLdCache(t, tt.cache)
			pr := loaded(prog)
			if tt.bad == "" {
				if pr != nil {
					t.Fatalf("loaded(%s) with the cache %s = %+v, want nothing held against it", prog, tt.cache, *pr)
				}
				return
			}
			if pr == nil {
				t.Fatalf("loaded(%s) = nil with the cache %s (mode %#o): another user could point ld.so at their libvtok.so; want %s named", prog, tt.cache, tt.mode, tt.bad)
			}
			if want := "NEEDED libvtok.so, looked up in " + tt.cache; pr.Path != tt.bad || pr.ELF != prog || !pr.System || pr.Entry != want {
				t.Errorf("loaded(%s) = %+v, want Path %s, System, Entry %q", prog, *pr, tt.bad, want)
			}
		})
	}
}

// A program linked with --audit or --depaudit (or against a library linked with --depaudit,
// which ld copies into the program) names audit libraries in its DT_AUDIT or DT_DEPAUDIT, and
// glibc's ld.so (2.32 and later) loads them into it at its start, as it does LD_AUDIT's: one in
// a directory another user may write is their code in the plugin. Before, neither tag was read
// and such a program passed. Now each library is found (a path as it is, a bare name as a
// NEEDED one is), checked and followed, the refusal naming the tag.
func TestLoadedChecksTheProgramsAuditLibraries(t *testing.T) {
	const audit = "unsigned int la_version(unsigned int v) { return v; }\n"
	_, safe, open := libIn(t, "libvtaudit.so", audit)
	cc(t, filepath.Join(safe, "libvtauditrunpath.so"), audit, "-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,"+open)
	const main = "int main(void) { return 0; }\n"
	for _, tt := range []struct {
		name, flag string
		bad        string // the Problem's Path, "" for none
		entry      string
	}{
		{"AUDIT of a root library", "-Wl,--audit=" + filepath.Join(safe, "libvtaudit.so"), "", ""},
		{"AUDIT in a directory any user may write", "-Wl,--audit=" + filepath.Join(safe, "libvtaudit.so") + ":" + filepath.Join(open, "libvtaudit.so"), open, "AUDIT " + filepath.Join(open, "libvtaudit.so")},
		{"DEPAUDIT in a directory any user may write", "-Wl,--depaudit=" + filepath.Join(open, "libvtaudit.so"), open, "DEPAUDIT " + filepath.Join(open, "libvtaudit.so")},
		{"AUDIT by a bare name found in the system's libraries", "-Wl,--audit=libvtaudit.so", open, "AUDIT libvtaudit.so, found in the system's libraries"},
		{"AUDIT of a root library whose RUNPATH any user may write", "-Wl,--audit=" + filepath.Join(safe, "libvtauditrunpath.so"), open, "RUNPATH " + open},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog := filepath.Join(t.TempDir(), "prog")
			cc(t, prog, main, tt.flag)
			if b, err := exec.Command("readelf", "-d", prog).Output(); err == nil && !strings.Contains(string(b), "AUDIT") {
				t.Skipf("this linker wrote no DT_AUDIT or DT_DEPAUDIT for %s", tt.flag)
			}
			pr := loaded(prog)
			if tt.bad == "" {
				if pr != nil {
					t.Fatalf("loaded(%s) = %+v, want nothing held against it", prog, *pr)
				}
				return
			}
			if pr == nil {
				t.Fatalf("loaded(%s) linked with %s = nil: ld.so loads that audit library into it; want %s named", prog, tt.flag, tt.bad)
			}
			if pr.Path != tt.bad || pr.ELF != prog || pr.System || !strings.Contains(pr.Entry, tt.entry) {
				t.Errorf("loaded(%s) = %+v, want Path %s and an Entry that says %q", prog, *pr, tt.bad, tt.entry)
			}
		})
	}
}

// A library linked with --auxiliary or --filter names its filtees in DT_AUXILIARY or DT_FILTER,
// and ld.so loads them with it, found as its NEEDED libraries are: a filtee in a directory
// another user may write is their code in the program. Before, neither tag was read and the
// program passed. Now each filtee is checked and followed, the refusal naming the tag.
func TestLoadedChecksTheLibrariesFiltees(t *testing.T) {
	_, safe, open := libIn(t, "libvtfiltee.so", "int volctl_test_lib(void) { return 1; }\n")
	const lib = "int volctl_test_lib(void) { return 0; }\n"
	const prog = "int volctl_test_lib(void);\nint main(void) { return volctl_test_lib(); }\n"
	for _, tt := range []struct {
		name, flag string
		bad        string // the Problem's Path, "" for none
		entry      string
	}{
		{"AUXILIARY of a root library", "-Wl,--auxiliary=" + filepath.Join(safe, "libvtfiltee.so"), "", ""},
		{"AUXILIARY in a directory any user may write", "-Wl,--auxiliary=" + filepath.Join(open, "libvtfiltee.so"), open, "AUXILIARY " + filepath.Join(open, "libvtfiltee.so")},
		{"FILTER in a directory any user may write", "-Wl,--filter=" + filepath.Join(open, "libvtfiltee.so"), open, "FILTER " + filepath.Join(open, "libvtfiltee.so")},
		{"AUXILIARY by a bare name found in the system's libraries", "-Wl,--auxiliary=libvtfiltee.so", open, "AUXILIARY libvtfiltee.so, found in the system's libraries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := mkdirMode(t, filepath.Join(t.TempDir(), "lib"), 0o755)
			cc(t, filepath.Join(dir, "libvtfilter.so"), lib, "-shared", "-fPIC", tt.flag)
			if b, err := exec.Command("readelf", "-d", filepath.Join(dir, "libvtfilter.so")).Output(); err == nil && !strings.Contains(string(b), "AUXILIARY") && !strings.Contains(string(b), "FILTER") {
				t.Skipf("this linker wrote no DT_AUXILIARY or DT_FILTER for %s", tt.flag)
			}
			p := filepath.Join(filepath.Dir(dir), "prog")
			cc(t, p, prog, "-L"+dir, "-lvtfilter", "-Wl,--enable-new-dtags,-rpath,"+dir)
			pr := loaded(p)
			if tt.bad == "" {
				if pr != nil {
					t.Fatalf("loaded(%s) = %+v, want nothing held against it", p, *pr)
				}
				return
			}
			if pr == nil {
				t.Fatalf("loaded(%s), whose library is linked with %s, = nil: ld.so loads that filtee with it; want %s named", p, tt.flag, tt.bad)
			}
			if pr.Path != tt.bad || pr.ELF != p || !strings.Contains(pr.Entry, tt.entry) || !strings.Contains(pr.Entry, "libvtfilter.so") {
				t.Errorf("loaded(%s) = %+v, want Path %s and an Entry that names libvtfilter.so's %q", p, *pr, tt.bad, tt.entry)
			}
		})
	}
}

// A non-root agent that may not read /etc/ld.so.preload (root's, mode 0600 on a hardened host)
// runs its plugins as itself: ld.so in them is refused the file too, and loads nothing from
// it. Before, every dynamic program was refused ("cannot be read"): no plugin ran. A privileged
// program (setuid), whose ld.so may read the file, is still refused.
func TestLoadedTakesAPreloadFileItsUserMayNotReadAsLdSoDoes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make a file this thread, run as another user, may not read")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // testing's directories are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	preload := filepath.Join(base, "ld.so.preload")
	if err := os.WriteFile(preload, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	preloadFile(t, preload)
	prog := filepath.Join(base, "prog")
	cc(t, prog, "int main(void) { return 0; }\n")
	suid := filepath.Join(base, "suid")
	cc(t, suid, "int main(void) { return 0; }\n")
	if err := os.Chmod(suid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	// This thread alone runs as nobody (setresuid(2) as a raw syscall is per thread; Go's
	// syscall.Setresuid would change every thread), its saved uid root's to come back.
	runtime.LockOSThread()
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), 65534, ^uintptr(0)); e != 0 {
		runtime.UnlockOSThread()
		t.Skipf("setresuid: %v", e)
	}
	prProg, prSuid := loaded(prog), loaded(suid)
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
		t.Fatalf("setresuid back to root: %v", e) // the thread stays locked: it dies with the test
	}
	runtime.UnlockOSThread()
	if prProg != nil {
		t.Errorf("loaded(%s) as uid 65534, who may not read %s: %v; want nil, as ld.so run as that user reads nothing from it", prog, preload, prProg)
	}
	if prSuid == nil || prSuid.Path != preload {
		t.Errorf("loaded(%s), setuid, as uid 65534: %v; want %s refused, which its ld.so, as root, reads", suid, prSuid, preload)
	}
}
