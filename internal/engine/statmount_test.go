package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestSelfBoundByStatmountAgreesWithTheCopy: boundOntoItself answered from the kernel's record
// of the mounts (statmount(2)) says what the copy of the parent's mount (open_tree(2)) says,
// for every shape of mount at a target, stacked ones and targets inside other mounts
// included; a file is always looked at through the copy.
func TestSelfBoundByStatmountAgreesWithTheCopy(t *testing.T) {
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
