package pathtrust

import (
	"os"
	"path/filepath"
	"strings"
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
