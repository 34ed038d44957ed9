package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// hostsDisk mounts a tmpfs holding a file, standing for a disk of the host that is nothing of
// volctl's: it returns where it is mounted and the file's path.
func hostsDisk(t *testing.T) (dir, file string) {
	t.Helper()
	dir = hostpathtest.MountDir(t)
	if err := unix.Mount("hostdisk", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	file = filepath.Join(dir, "precious")
	if err := os.WriteFile(file, []byte("the host's"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// requireUntouched fails unless the host's disk is still mounted and its file there.
func requireUntouched(t *testing.T, dir, file string) {
	t.Helper()
	if !hostpathtest.Mounted(t, dir) {
		t.Errorf("the host's disk at %s was unmounted by the release: the plugin followed the link volctl sent it", dir)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "the host's" {
		t.Errorf("the host's file %s: %q, %v", file, b, err)
	}
}

// A claim's target, unmounted by hand and its directory replaced by a symlink (to another disk
// of the host) before the release: a plugin resolves the path it is given as it is, following
// the link, and volctl's own plugin unmounted what was mounted where it led, answered OK, and
// the release said "Released", the host's disk gone from under its users (a tmpfs's data with
// it). volctl, which made that path, removes the link (never what it points to) before
// NodeUnpublishVolume, says so, and the release goes on. So for a staging path.
func TestReleaseRemovesASymlinkPutInPlaceOfTheTargetBeforeNodeUnpublish(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"target", "staging"} {
		t.Run(which, func(t *testing.T) {
			h := newHostpathEngine(t)
			cl := h.claimNew(t, "v", "a", spec.SingleNodeWriter)
			staging := stagingPath(h.state, "hp", "v")
			disk, file := hostsDisk(t)
			path := cl.TargetPath
			if which == "staging" {
				path = staging
				if err := unix.Unmount(cl.TargetPath, 0); err != nil { // unmounted by hand too
					t.Fatal(err)
				}
			}
			if err := unix.Unmount(path, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(disk, path); err != nil {
				t.Fatal(err)
			}
			_, err := h.e.Release(h.ctx, "v", "a")
			requireUntouched(t, disk, file)
			if err != nil {
				t.Fatalf("release: %v", err)
			}
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Errorf("the link at the %s is still there", which)
			}
			evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "target-link-removed", VolumeID: "v"})
			want := `a symlink to "` + disk + `" stood in place of volume "v"'s ` + which + ` ` + path
			if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Message, want) {
				t.Errorf("target-link-removed events = %+v, %v; want one saying %s", evs, err, want)
			}
			// The next claim converges: staged and published again at volctl's own paths.
			again, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err != nil {
				t.Fatalf("claim after the release: %v", err)
			}
			if !hostpathtest.Mounted(t, again.TargetPath) || !hostpathtest.Mounted(t, staging) {
				t.Errorf("claim after the release: target or staging not mounted")
			}
			if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A directory on the way to a claim's target (its publish directory) replaced by a symlink:
// NodeUnpublishVolume is not sent through it, the error names the link and what to do, and the
// claim is left for reconcile, which finishes once the link is gone.
func TestReleaseRefusesATargetReachedThroughASymlink(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	cl := h.claimNew(t, "v", "a", spec.SingleNodeWriter)
	disk, file := hostsDisk(t)
	// The host's disk mounted at the name the target has, inside the directory the link leads to.
	if err := os.Mkdir(filepath.Join(disk, filepath.Base(cl.TargetPath)), 0o700); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(disk, filepath.Base(cl.TargetPath))
	if err := unix.Mount("hostdisk2", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	innerFile := filepath.Join(inner, "precious")
	if err := os.WriteFile(innerFile, []byte("the host's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(cl.TargetPath)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(disk, dir); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Release(h.ctx, "v", "a")
	requireUntouched(t, disk, file)
	requireUntouched(t, inner, innerFile)
	want := dir + " is a symlink"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rm "+dir) {
		t.Fatalf("release: %v; want it refused saying %q and to remove the link", err, want)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("reconcile after the link's removal: %+v, %v", rep, err)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "v", "a"); err == nil {
		t.Errorf("the claim is still held after reconcile")
	}
}
