package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestSelfBoundByStatmountAgreesWithTheCopy: boundOntoItself answered from the kernel's record
// of the mounts (statmount(2)) says what the copy of the parent's mount (open_tree(2)) says,
// for every shape of mount at a target, stacked ones and targets inside other mounts
// included; a file is always looked at through the copy.
func TestSelfBoundByStatmountAgreesWithTheCopy(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	bind := func(t *testing.T, from, to string) {
		t.Helper()
		if err := unix.Mount(from, to, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s at %s: %v", from, to, err)
		}
	}
	mkdir := func(t *testing.T, path string) string {
		t.Helper()
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) string // makes the mounts, returns the target
		want  bool
		file  bool
		how   string // "" when the statx of the target and its parent answer alone
	}{
		{name: "bound onto itself", want: true, setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "t"))
			bind(t, target, target)
			return target
		}},
		{name: "bound from a sibling", setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "t"))
			bind(t, mkdir(t, filepath.Join(dir, "s")), target)
			return target
		}},
		{name: "bound from its parent", setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "p", "t"))
			bind(t, filepath.Dir(target), target)
			return target
		}},
		{name: "bound onto itself twice", want: true, setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "t"))
			bind(t, target, target)
			bind(t, target, target)
			return target
		}},
		{name: "a sibling, then itself on top (the sibling's root)", setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "t"))
			bind(t, mkdir(t, filepath.Join(dir, "s")), target)
			bind(t, target, target)
			return target
		}},
		{name: "itself, then a sibling on top", setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "t"))
			bind(t, target, target)
			bind(t, mkdir(t, filepath.Join(dir, "s")), target)
			return target
		}},
		{name: "bound onto itself inside a bind of another directory", want: true, setup: func(t *testing.T, dir string) string {
			mkdir(t, filepath.Join(dir, "x", "t"))
			bind(t, filepath.Join(dir, "x"), mkdir(t, filepath.Join(dir, "p")))
			target := filepath.Join(dir, "p", "t")
			bind(t, target, target)
			return target
		}},
		{name: "another name inside a bind of another directory", setup: func(t *testing.T, dir string) string {
			mkdir(t, filepath.Join(dir, "x", "t"))
			bind(t, filepath.Join(dir, "x"), mkdir(t, filepath.Join(dir, "p")))
			target := filepath.Join(dir, "p", "t")
			bind(t, filepath.Join(dir, "x"), target) // x's root, not t
			return target
		}},
		{name: "bound onto itself on a file system of its own", want: true, setup: func(t *testing.T, dir string) string {
			fs := mkdir(t, filepath.Join(dir, "fs"))
			if err := unix.Mount("tmpfs", fs, "tmpfs", 0, "size=1m"); err != nil {
				t.Fatalf("tmpfs: %v", err)
			}
			target := mkdir(t, filepath.Join(fs, "t"))
			bind(t, target, target)
			return target
		}},
		{name: "a file system's root at the target", how: "-", setup: func(t *testing.T, dir string) string {
			target := mkdir(t, filepath.Join(dir, "t"))
			if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
				t.Fatalf("tmpfs: %v", err)
			}
			return target
		}},
		{name: "a file bound onto itself", want: true, file: true, setup: func(t *testing.T, dir string) string {
			target := filepath.Join(dir, "dev")
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			bind(t, target, target)
			return target
		}},
		{name: "a file bound from a hard link of itself", want: true, file: true, setup: func(t *testing.T, dir string) string {
			target := filepath.Join(dir, "dev")
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(target, filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			bind(t, filepath.Join(dir, "link"), target)
			return target
		}},
	}
	_, smErr := statMount(1) // ENOSYS before Linux 6.8; any other answer means it is there
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := c.setup(t, hostpathtest.MountDir(t))
			tid, ok := statID(target)
			if !ok {
				t.Fatalf("statx %s failed", target)
			}
			wantHow := func(useStatmount bool) string {
				switch {
				case c.how == "-":
					return ""
				case useStatmount && !c.file:
					return "statmount"
				}
				return "copy"
			}
			for _, useStatmount := range []bool{false, true} {
				if useStatmount && errors.Is(smErr, unix.ENOSYS) {
					t.Logf("statmount(2) not asked: this kernel has none (it came in Linux 6.8)")
					continue
				}
				got, how := selfBound(target, tid, useStatmount)
				if got != c.want || how != wantHow(useStatmount) {
					t.Errorf("selfBound(%s, useStatmount %v) = %v by %q, want %v by %q", target, useStatmount, got, how, c.want, wantHow(useStatmount))
				}
			}
		})
	}
}

// TestMountRootsByStatmountAgreeWithTheTable: the mounts at paths, their file systems and
// roots, as statmount(2) gives them are what the kernel's table says, for a bind, stacked
// binds, a file, a path that is no mount point, a missing one, and a mount reached through a
// symlink (which statmount leaves to the table).
func TestMountRootsByStatmountAgreeWithTheTable(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	if _, err := statMount(1); errors.Is(err, unix.ENOSYS) {
		t.Skip("statmount(2) came in Linux 6.8; this kernel has none, and MountRoots reads the table")
	}
	dir := hostpathtest.MountDir(t)
	for _, d := range []string{"src/sub", "bind", "stack", "plain", "real/m"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][2]string{
		{"src", "bind"}, {"src", "stack"}, {"src/sub", "stack"}, {"src/f", "file"}, {"src", "real/m"},
	} {
		if err := unix.Mount(filepath.Join(dir, b[0]), filepath.Join(dir, b[1]), "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s at %s: %v", b[0], b[1], err)
		}
	}
	var paths []string
	for _, p := range []string{"bind", "stack", "file", "plain", "missing", "src/sub", "real/m"} {
		paths = append(paths, filepath.Join(dir, p))
	}
	byStatmount, ok := mountRootsByStatmount(paths)
	if !ok {
		t.Fatalf("statmount did not answer for %v", paths)
	}
	fromTable, err := mountRootsFromTable(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(byStatmount) != 4 || len(fromTable) != 4 {
		t.Errorf("mounts found: statmount %v, table %v; want bind, stack, file and real/m each", byStatmount, fromTable)
	}
	for p, r := range fromTable {
		if byStatmount[p] != r {
			t.Errorf("%s: statmount says %+v, the table %+v", p, byStatmount[p], r)
		}
	}
	if r := byStatmount[filepath.Join(dir, "stack")]; !strings.HasSuffix(r.root, "/src/sub") {
		t.Errorf("stack: root %q, want the topmost mount's (…/src/sub)", r.root)
	}
	if _, ok := mountRootsByStatmount([]string{filepath.Join(dir, "link", "m")}); ok {
		t.Errorf("a mount reached through a symlink was answered by statmount, want it left to the table")
	}
}
