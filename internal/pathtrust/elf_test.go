package pathtrust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A RUNPATH entry's $ORIGIN is the program's directory; $LIB and $PLATFORM, which ld.so
// expands to a name of its own, stand for every name there and for the directory they are in,
// so the one ld.so picks is checked whichever it is; another $WORD is a name like any other.
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
	dir("opt/arch/x86_64", 0o777)
	dir("opt/open", 0o777)
	dir("opt/$FOO", 0o755)
	for _, tt := range []struct {
		entry, bad string // bad: the Path of the Problem, "" for none
	}{
		{"$ORIGIN/../lib", ""},
		{"${ORIGIN}/../open", filepath.Join(base, "opt/open")},
		{filepath.Join(base, "opt/arch/$LIB"), filepath.Join(base, "opt/arch/x86_64")},
		{filepath.Join(base, "opt/open/${PLATFORM}"), filepath.Join(base, "opt/open")},
		{filepath.Join(base, "opt/$FOO"), ""},
		{"lib", "lib"},
		{"", "."},
	} {
		pr := searchedDir(tt.entry, origin)
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
