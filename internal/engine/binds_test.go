package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// bothResolvers runs fn with openat2 (RESOLVE_NO_SYMLINKS) and with the O_PATH|O_NOFOLLOW walk
// that stands in for it on kernels without openat2.
func bothResolvers(t *testing.T, fn func(t *testing.T)) {
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "onofollow"
		}
		t.Run(name, func(t *testing.T) {
			swapsGlobals(t, "noOpenat2")
			was := noOpenat2.Load()
			noOpenat2.Store(fallback)
			t.Cleanup(func() { noOpenat2.Store(was) })
			fn(t)
		})
	}
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	return out
}

// entries lists what is in dir (nothing may have been made where a refused symlink points).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// claimWithBind creates a volume on the hostpath engine and claims it for alloc "a" with one
// volume_mount at dest.
func (h *hostpathEngine) claimWithBind(t *testing.T, vol string, b spec.VolumeMount) (ClaimInfo, error) {
	t.Helper()
	sv := spec.Volume{ID: vol, Name: vol, Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	if b.PropagationMode == "" {
		b.PropagationMode = spec.PropagationPrivate
	}
	return h.e.Claim(h.ctx, ClaimRequest{VolumeID: vol, Alloc: "a", Binds: []spec.VolumeMount{b}})
}

// TestBindRefusesSymlinkedDestination: a volume_mount destination with a symlink in it, in a
// parent or as the last component, is refused with an error naming the destination and the
// symlink, and nothing is made or mounted where the symlink points. Real mounts, as root.
func TestBindRefusesSymlinkedDestination(t *testing.T) {
	for _, tt := range []struct {
		name string
		// plant makes the symlink under dests, pointing at elsewhere, and returns the
		// destination and the component that must be named.
		plant func(t *testing.T, dests, elsewhere string) (dest, link string)
	}{
		{"parent", func(t *testing.T, dests, elsewhere string) (string, string) {
			link := filepath.Join(dests, "alloc")
			if err := os.Symlink(elsewhere, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "data"), link
		}},
		{"parent higher up", func(t *testing.T, dests, elsewhere string) (string, string) {
			link := filepath.Join(dests, "alloc")
			if err := os.Symlink(elsewhere, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "deeper", "data"), link
		}},
		{"last component", func(t *testing.T, dests, elsewhere string) (string, string) {
			link := filepath.Join(dests, "data")
			if err := os.Symlink(elsewhere, link); err != nil {
				t.Fatal(err)
			}
			return link, link
		}},
		{"last component dangling", func(t *testing.T, dests, elsewhere string) (string, string) {
			link := filepath.Join(dests, "data")
			if err := os.Symlink(filepath.Join(elsewhere, "new"), link); err != nil {
				t.Fatal(err)
			}
			return link, link
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				h := newHostpathEngine(t)
				dests, elsewhere := hostpathtest.MountDir(t), hostpathtest.MountDir(t)
				dest, link := tt.plant(t, dests, elsewhere)
				_, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest})
				if err == nil {
					t.Fatalf("claim with volume_mount %s through a symlink succeeded", dest)
				}
				if !strings.Contains(err.Error(), "volume_mount "+dest+": ") || !strings.Contains(err.Error(), link+" is a symlink") {
					t.Errorf("error = %v\nwant it to name the destination %s and the symlink %s", err, dest, link)
				}
				if m := mountsUnder(t, elsewhere); len(m) != 0 {
					t.Errorf("mounted where the symlink points: %v", m)
				}
				if got := entries(t, elsewhere); len(got) != 0 {
					t.Errorf("made where the symlink points: %v", got)
				}
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the symlink was replaced: %v %v", fi, err)
				}
			})
		})
	}
}

// TestBindDestination: a destination without symlinks is made (parents too) and bind-mounted
// with what the volume_mount asks (read-only, private), data flows through it, a second bind
// is a no-op, and releasing the claim unmounts it.
func TestBindDestination(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		h := newHostpathEngine(t)
		dest := filepath.Join(hostpathtest.MountDir(t), "alloc", "deeper", "data")
		cl, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cl.TargetPath, "f"), []byte("through the target"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dest, "f")); err != nil || string(b) != "through the target" {
			t.Fatalf("read through the destination: %q %v", b, err)
		}
		ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dest))
		if err != nil || len(ms) != 1 {
			t.Fatalf("mounts at %s: %+v %v", dest, ms, err)
		}
		if !strings.Contains(","+ms[0].Options+",", ",ro,") || strings.Contains(ms[0].Optional, "shared:") {
			t.Errorf("%s mounted %q (optional %q), want read-only and private", dest, ms[0].Options, ms[0].Optional)
		}
		// Binding again (reconcile does) changes nothing: no second mount on top.
		var stored store.Claim
		if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
			stored, err = tx.Claims().Find("data", "a")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if bound, err := h.e.bind(h.ctx, &stored); err != nil || len(bound) != 0 {
			t.Fatalf("binding again = %v, %v; want nothing bound, the destination mounted", bound, err)
		}
		if m := mountsUnder(t, dest); len(m) != 1 {
			t.Errorf("after a second bind, mounts at %s: %v", dest, m)
		}
		if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
			t.Fatal(err)
		}
		if m := mountsUnder(t, dest); len(m) != 0 {
			t.Errorf("still mounted after release: %v", m)
		}
	})
}

// TestUnbindRefusesSymlinkedDestination: when a component of a bound destination has become a
// symlink, release does not unmount what the symlink leads to; it says which component it is.
func TestUnbindRefusesSymlinkedDestination(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dests, elsewhere := hostpathtest.MountDir(t), hostpathtest.MountDir(t)
	dest := filepath.Join(dests, "alloc", "data")
	if _, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest}); err != nil {
		t.Fatal(err)
	}
	// Somebody else's mount where the symlink will point.
	theirs := filepath.Join(elsewhere, "data")
	if err := os.MkdirAll(theirs, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(h.state, theirs, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dests, "moved")
	if err := os.Rename(filepath.Join(dests, "alloc"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dests, "alloc")); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Release(h.ctx, "data", "a")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dests, "alloc")+" is a symlink") {
		t.Fatalf("release = %v, want the symlink named", err)
	}
	if m := mountsUnder(t, theirs); len(m) != 1 {
		t.Errorf("the mount the symlink leads to: %v, want it left alone", m)
	}
}

// TestBindMountsTheOpenedDirectory: the mount lands on the directory the walk opened, not on
// what the path names by the time of the mount. Between the walk and the mount, the
// destination is moved away and a symlink to another directory put in its place (what a
// racing user with write access to the parent would do): mountOn still mounts on the original
// directory, and bindFD, which then finds the symlink at the name, undoes that mount and says
// so. Nothing ever lands where the symlink points.
func TestBindMountsTheOpenedDirectory(t *testing.T) {
	hostpathtest.RequireMount(t)
	bothResolvers(t, func(t *testing.T) {
		dir, elsewhere := hostpathtest.MountDir(t), hostpathtest.MountDir(t)
		src := bindSource(t, dir)
		dest, moved := filepath.Join(dir, "dest"), filepath.Join(dir, "moved")
		swapped := func(t *testing.T) *pathFD {
			t.Helper()
			dst, err := openNoFollow("/", dest, createDirs)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dest, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, dest); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				dst.close()
				_ = os.Remove(dest)
				_ = os.Remove(moved)
			})
			return dst
		}

		t.Run("mountOn", func(t *testing.T) {
			dst := swapped(t)
			if err := mountOn(src, dst); err != nil {
				t.Fatal(err)
			}
			if got := mountsUnder(t, moved); len(got) != 1 {
				t.Errorf("mounts on the opened directory (now %s): %v, want one", moved, got)
			}
			if b, err := os.ReadFile(filepath.Join(moved, "f")); err != nil || string(b) != "source" {
				t.Errorf("the source through the opened directory: %q %v", b, err)
			}
			if got := mountsUnder(t, elsewhere); len(got) != 0 {
				t.Errorf("mounted where the swapped-in symlink points: %v", got)
			}
			if err := undoMountOn(dst); err != nil {
				t.Fatal(err)
			}
			if got := mountsUnder(t, moved); len(got) != 0 {
				t.Errorf("undoMountOn left %v", got)
			}
		})
		t.Run("bindFD", func(t *testing.T) {
			dst := swapped(t)
			_, err := bindFD(src, dst, spec.VolumeMount{Destination: dest, PropagationMode: spec.PropagationPrivate, ReadOnly: true})
			if err == nil || !strings.Contains(err.Error(), dest+" is a symlink") {
				t.Fatalf("bindFD after the swap = %v, want the symlink at %s named", err, dest)
			}
			if got := mountsUnder(t, dir); len(got) != 0 {
				t.Errorf("mounts left after the refused bind: %v", got)
			}
			if got := mountsUnder(t, elsewhere); len(got) != 0 {
				t.Errorf("mounted where the swapped-in symlink points: %v", got)
			}
		})
		if got := entries(t, elsewhere); len(got) != 0 {
			t.Errorf("the swapped-in symlink's target got %v", got)
		}
	})
}

// TestMakeDirsRefusesSymlinkInStateDir: a symlink planted in the state dir's publish or
// staging tree is refused with an error naming it; the claim makes nothing where it points
// and the plugin is not asked to publish or stage there.
func TestMakeDirsRefusesSymlinkInStateDir(t *testing.T) {
	for _, tt := range []struct {
		name string
		link func(state string) string
	}{
		{"publish alloc", func(state string) string { return filepath.Join(state, publishDir, "a") }},
		{"publish volume", func(state string) string { return filepath.Join(state, publishDir, "a", "vol") }},
		{"publish tree", func(state string) string { return filepath.Join(state, publishDir) }},
		{"publish target", func(state string) string {
			return filepath.Join(state, publishDir, "a", "vol", usageName(false, spec.FileSystem, spec.SingleNodeWriter))
		}},
		{"staging plugin", func(state string) string { return filepath.Join(state, stagingDir, "mem") }},
		{"staging volume", func(state string) string { return filepath.Join(state, stagingDir, "mem", "vol") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("vol"))
				elsewhere := t.TempDir()
				link := tt.link(h.dir)
				if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(elsewhere, link); err != nil {
					t.Fatal(err)
				}
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "vol", Alloc: "a"})
				var se *symlinkError
				if !errors.As(err, &se) || se.Component != link || !strings.Contains(err.Error(), link+" is a symlink") {
					t.Fatalf("claim = %v, want a refusal naming the symlink %s", err, link)
				}
				if got := entries(t, elsewhere); len(got) != 0 {
					t.Errorf("made where the symlink points: %v", got)
				}
			})
		})
	}
}

// TestOpenNoFollow: the walk names the component that is a symlink wherever it is, creates
// nothing through one, and opens and creates plain paths.
func TestOpenNoFollow(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		root, elsewhere := t.TempDir(), t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			path string
			mode create
			link string // "" when the walk must succeed
		}{
			{path: "link", mode: createNothing, link: "link"},
			{path: "link", mode: createDirs, link: "link"},
			{path: "link", mode: createFile, link: "link"},
			{path: "link/a/b", mode: createDirs, link: "link"},
			{path: "link/f", mode: createFile, link: "link"},
			{path: "d/e/f", mode: createDirs},
			{path: "d/e/file", mode: createFile},
			{path: "d/e", mode: createNothing},
		} {
			path := filepath.Join(root, tt.path)
			p, err := openNoFollow(root, path, tt.mode)
			if tt.link == "" {
				if err != nil {
					t.Errorf("%s (mode %d): %v", tt.path, tt.mode, err)
					continue
				}
				p.close()
				continue
			}
			var se *symlinkError
			if !errors.As(err, &se) || se.Path != path || se.Component != filepath.Join(root, tt.link) {
				t.Errorf("%s (mode %d) = %v, want the symlink %s named", tt.path, tt.mode, err, tt.link)
			}
		}
		if got := entries(t, elsewhere); len(got) != 0 {
			t.Errorf("made through the symlink: %v", got)
		}
		if fi, err := os.Stat(filepath.Join(root, "d", "e", "file")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("createFile made %v, %v", fi, err)
		}
		if _, err := openNoFollow(root, filepath.Join(root, "missing"), createNothing); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a missing path: %v, want ErrNotExist", err)
		}
		if _, err := openNoFollow(root, filepath.Dir(root), createNothing); err == nil {
			t.Error("a path above the root was opened")
		}
	})
}
