package engine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// What a delete or a release killed between its commit and its tidying leaves: empty staging
// and publish directories that no registered volume or live claim accounts for. Reconcile
// removes them, and only them: a registered volume's kept staging dir, a live claim's target
// and its parents, a directory with something in it, a mount point, a directory an operation
// in progress holds the volume's lock for, and whatever a symlink in the state dir points at
// all stay.
func TestReconcileTidiesDirsNothingAccountsFor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"gone", "kept", "live", "busy", "full"} {
		h.create(volume(id))
	}
	live := h.claim(ClaimRequest{VolumeID: "live", Alloc: "web"})
	kept := h.claim(ClaimRequest{VolumeID: "kept", Alloc: "old"})
	h.release("kept", "old")
	if err := h.e.DeleteVolume(h.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	mkdirs := func(paths ...string) {
		t.Helper()
		for _, p := range paths {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Left by a delete killed before its tidying, by the releases of claims that are gone, and
	// by a deregistered plugin's last delete.
	leftStaging := stagingPath(h.dir, "mem", "gone")
	leftOtherPlugin := stagingPath(h.dir, "old-plugin", "kept") // "kept" is registered with mem
	leftTarget := filepath.Join(h.dir, publishDir, "old", "kept", "rw-file-system-single-node-writer")
	leftVolumeDir := filepath.Join(h.dir, publishDir, "web", "gone")
	mkdirs(leftStaging, leftOtherPlugin, leftTarget, leftVolumeDir)
	// Not to be removed.
	keptStaging := stagingPath(h.dir, "mem", "kept")
	busyTarget := filepath.Join(h.dir, publishDir, "batch", "busy", "rw-file-system-single-node-writer")
	fullTarget := filepath.Join(h.dir, publishDir, "batch", "full", "rw-file-system-single-node-writer")
	mkdirs(busyTarget, fullTarget)
	if err := os.WriteFile(filepath.Join(fullTarget, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere", "v")
	mkdirs(outside)
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(h.dir, stagingDir, "linked")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{leftTarget, busyTarget, fullTarget} {
		h.mounts.markGone(p) // this fake mount table takes any target directory for a mount
	}
	unlock := h.lockVolume("busy")
	rep, err := h.e.Reconcile(h.ctx)
	unlock()
	if err != nil || len(rep.Actions) != 0 || len(rep.Problems) != 0 {
		t.Fatalf("reconcile = %+v, %v; want nothing to report", rep, err)
	}
	for _, p := range []string{leftStaging, leftOtherPlugin, filepath.Dir(leftOtherPlugin),
		filepath.Join(h.dir, publishDir, "old"), leftVolumeDir} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s, which nothing accounts for, after reconcile: %v; want it removed", p, err)
		}
	}
	for _, p := range []string{keptStaging, live.TargetPath, filepath.Dir(live.TargetPath), busyTarget,
		filepath.Join(fullTarget, "data"), outside, filepath.Join(h.dir, stagingDir, "linked")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s after reconcile: %v; want it kept", p, err)
		}
	}
	if kept.TargetPath != leftTarget {
		t.Fatalf("the released claim's target was %s, not the path this test left: %s", kept.TargetPath, leftTarget)
	}

	// The operation that held "busy" is over and left its directory: the next pass removes it.
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(h.dir, publishDir, "batch", "busy")); !os.IsNotExist(err) {
		t.Errorf("%s after the next reconcile: %v; want it removed", busyTarget, err)
	}
}

// A leftover directory that is a mount point is not removed (the orphan report names it).
func TestReconcileTidyLeavesAMountPoint(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	h := newHarness(t, nil)
	target := filepath.Join(h.dir, publishDir, "old", "v", "rw-file-system-single-node-writer")
	if err := os.MkdirAll(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(t.TempDir(), target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	rep, _ := h.e.Reconcile(h.ctx)
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != "orphan" {
		t.Errorf("reconcile problems = %+v; want the orphan mount reported", rep.Problems)
	}
	if !hostpathtest.Mounted(t, target) {
		t.Errorf("%s is no longer mounted after reconcile", target)
	}
}
