package nomadcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records what Dir did; Fatal and Skip stop the caller as testing's do.
type fakeTB struct{ fatal, skip string }

type stop struct{}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.fatal = fmt.Sprintln(args...); panic(stop{}) }
func (f *fakeTB) Skip(args ...any)  { f.skip = fmt.Sprintln(args...); panic(stop{}) }

func callDir(f *fakeTB) (dir string) {
	defer func() {
		if r := recover(); r != nil && r != (stop{}) {
			panic(r)
		}
	}()
	return Dir(f)
}

// checkout makes <tmp>/repo/sub with a go.mod in repo, and changes into sub.
func checkout(t *testing.T) (parent string) {
	parent = t.TempDir()
	sub := filepath.Join(parent, "repo", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "repo", "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	return parent
}

// callDirWithoutCorpus calls Dir in a fresh checkout with no corpus and CI set to ci, and
// returns what Dir did and the corpus path it should name.
func callDirWithoutCorpus(t *testing.T, ci string) (f *fakeTB, want string) {
	t.Helper()
	parent := checkout(t)
	t.Setenv("CI", ci)
	f = &fakeTB{}
	callDir(f)
	return f, filepath.Join(parent, "shared", "compat", "nomad-specs")
}

func TestDirSkipsWithThePathOnAFreshClone(t *testing.T) {
	f, want := callDirWithoutCorpus(t, "")
	if f.fatal != "" || !strings.Contains(f.skip, "is not at "+want) {
		t.Fatalf("skip %q, fatal %q; want a skip naming %s", f.skip, f.fatal, want)
	}
}

func TestDirFailsUnderCI(t *testing.T) {
	f, want := callDirWithoutCorpus(t, "true")
	if f.skip != "" || !strings.Contains(f.fatal, want) || !strings.Contains(f.fatal, "CI=true") {
		t.Fatalf("skip %q, fatal %q; want a failure naming %s and CI=true", f.skip, f.fatal, want)
	}
}

func TestDirFindsTheCorpus(t *testing.T) {
	parent := checkout(t)
	t.Setenv("CI", "true")
	want := filepath.Join(parent, "shared", "compat", "nomad-specs")
	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(want, "SOURCES.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{}
	if got := callDir(f); got != want || f.skip != "" || f.fatal != "" {
		t.Fatalf("Dir = %q (skip %q, fatal %q), want %s", got, f.skip, f.fatal, want)
	}
}
