package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"golang.org/x/sys/unix"
)

// bindSource opens dir/source, a directory holding one file, as a claim's target is opened.
func bindSource(t *testing.T, dir string) *pathFD {
	t.Helper()
	source := filepath.Join(dir, "source")
	if err := os.Mkdir(source, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(source, "f"), []byte("source"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := openNoFollow(dir, source, createNothing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.close)
	return src
}

// TestBindRefusesADestinationWhoseParentWasSwapped: between the walk of a volume_mount's
// destination and the mount, a hostile owner of its parent directory renames that parent away
// and puts a symlink (or another directory) in its place. The mount lands on the directory the
// walk opened, wherever it went; before, bindFD's check reopened the last name through the
// parent's descriptor, which had moved with it, so the bind was taken for made at the
// destination while the destination's path led elsewhere (and the release, walking the path,
// found nothing to unmount there, leaving the volume bound in the renamed tree). Now the
// check walks the destination again from "/": the bind is undone and refused, naming what
// changed, and nothing lands where the swapped-in path points.
func TestBindRefusesADestinationWhoseParentWasSwapped(t *testing.T) {
	hostpathtest.RequireMount(t)
	for _, swapIn := range []string{"symlink", "directory"} {
		t.Run(swapIn, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				dir, elsewhere := hostpathtest.MountDir(t), hostpathtest.MountDir(t)
				src := bindSource(t, dir)
				parent := filepath.Join(dir, "alloc")
				dest, moved := filepath.Join(parent, "data"), filepath.Join(dir, "moved")
				dst, err := openNoFollow("/", dest, createDirs)
				if err != nil {
					t.Fatal(err)
				}
				defer dst.close()
				if err := os.Rename(parent, moved); err != nil {
					t.Fatal(err)
				}
				if swapIn == "symlink" {
					if err := os.Symlink(elsewhere, parent); err != nil {
						t.Fatal(err)
					}
					if err := os.Mkdir(filepath.Join(elsewhere, "data"), 0o750); err != nil {
						t.Fatal(err)
					}
				} else if err := os.MkdirAll(filepath.Join(parent, "data"), 0o750); err != nil {
					t.Fatal(err)
				}
				_, err = bindFD(src, dst, spec.VolumeMount{Destination: dest, PropagationMode: spec.PropagationPrivate})
				if err == nil {
					got := mountsUnder(t, dir)
					_ = undoMountOn(dst)
					t.Fatalf("bindFD after %s's parent was swapped for a %s succeeded; mounts: %v", dest, swapIn, got)
				}
				if !strings.Contains(err.Error(), "volume_mount "+dest) {
					t.Errorf("error %q does not name the volume_mount", err)
				}
				noMountsUnder(t, dir, elsewhere)
			})
		})
	}
}

// TestBindAgainstARacingRenamer: a goroutine swaps the destination's parent for a symlink to
// another directory and back, as fast as it can (one step at a time: the test looks between
// steps), while volume_mounts are bound and unbound
// through the engine's own steps. Whatever the interleaving, nothing is ever mounted where the
// symlink points, a refused bind leaves no mount behind, and a bind that succeeds was
// verified at the destination's path.
func TestBindAgainstARacingRenamer(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	dir, elsewhere := hostpathtest.MountDir(t), hostpathtest.MountDir(t)
	src := bindSource(t, dir)
	if err := os.Mkdir(filepath.Join(elsewhere, "data"), 0o750); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(dir, "alloc")
	dest, moved := filepath.Join(parent, "data"), filepath.Join(dir, "moved")
	if err := os.MkdirAll(dest, 0o750); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex // held by the test while it looks at where a bind landed
	wg.Add(1)
	go func() {
		defer wg.Done()
		for swapped := false; !stop.Load(); swapped = !swapped {
			mu.Lock()
			if !swapped { // the parent moved away, a symlink in its place
				_ = os.Rename(parent, moved)
				_ = os.Symlink(elsewhere, parent)
			} else { // and back
				_ = os.Remove(parent)
				_ = os.Rename(moved, parent)
			}
			mu.Unlock()
			runtime.Gosched() // let a bind in between steps too
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	var made, refused int
	for range 200 {
		dst, err := openNoFollow("/", dest, createNothing)
		if err != nil {
			refused++
			continue
		}
		_, err = bindFD(src, dst, spec.VolumeMount{Destination: dest, PropagationMode: spec.PropagationPrivate})
		mu.Lock()
		if err == nil {
			made++
			if err := undoMountOn(dst); err != nil {
				t.Errorf("undo: %v", err)
			}
		} else {
			refused++
		}
		noMountsUnder(t, dir, elsewhere)
		mu.Unlock()
		dst.close()
		if t.Failed() {
			break
		}
	}
	t.Logf("%d binds made, %d refused", made, refused)
}

// TestReleaseFindsAVolumeMountMovedAway: a claim's volume_mount is bound, then its owner
// renames the destination's parent away and makes a new, empty one in its place. Before, the
// release walked the destination's path, found nothing mounted there, took the bind for
// undone and went on to unpublish, unstage and detach, leaving the volume bound in the renamed
// tree: still readable and writable there after its release, by whoever holds that tree, and
// mounted while the plugin detached it. Now the release finds the claim's bind wherever it
// went (a mount of the volume outside the state dir that no claim's destination accounts
// for), names it, and stops, mounts untouched, until it is unmounted.
func TestReleaseFindsAVolumeMountMovedAway(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dests, boundAt := boundThenMovedAway(t, h)
	if err := os.MkdirAll(filepath.Join(dests, "alloc", "data"), 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Release(h.ctx, "data", "a")
	if err == nil {
		t.Fatalf("release succeeded with the volume still bound at %v", mountsUnder(t, dests))
	}
	if !strings.Contains(err.Error(), boundAt) {
		t.Errorf("release error %q does not name %s, where the volume is still bound", err, boundAt)
	}
	if cl, err := h.e.ClaimInfo(h.ctx, "data", "a"); err != nil || !cl.Releasing {
		t.Fatalf("claim after the refused release = %+v, %v; want it left releasing", cl, err)
	}
	if err := unix.Unmount(boundAt, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Fatalf("release once the moved bind is unmounted: %v", err)
	}
	if m := mountsUnder(t, dests); len(m) != 0 {
		t.Errorf("mounts left: %v", m)
	}
}

// noMountsUnder fails the test when anything is mounted in dir (a bind refused or undone left
// one) or in elsewhere (where a swapped-in path pointed).
func noMountsUnder(t *testing.T, dir, elsewhere string) {
	t.Helper()
	if got := mountsUnder(t, dir); len(got) != 0 {
		t.Errorf("mounts left after the bind was refused or undone: %v", got)
	}
	if got := mountsUnder(t, elsewhere); len(got) != 0 {
		t.Errorf("mounted where the swapped-in path points: %v", got)
	}
}
