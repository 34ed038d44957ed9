package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A volume's staging directory is kept from its first staging while the volume is registered,
// not made and removed for every staging: a release leaves it empty and unmounted, proves that
// without reading the mount table, and reconcile does not take it for an orphan; the next
// claim stages there again. It goes when the volume is deleted or deregistered, and the
// plugin's directory with its last volume or with the plugin.
func TestStagingDirKeptWhileTheVolumeIsRegistered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"v", "w"} {
		h.create(volume(id))
		h.claim(ClaimRequest{VolumeID: id, Alloc: "a"})
		reads := h.mounts.reads
		h.release(id, "a")
		if n := h.mounts.reads - reads; n != 0 {
			t.Errorf("the release of %q read the mount table %d time(s); its kept, empty staging dir needs none", id, n)
		}
	}
	v, w := stagingPath(h.dir, "mem", "v"), stagingPath(h.dir, "mem", "w")
	for _, p := range []string{v, w} {
		if got := entries(t, p); len(got) != 0 {
			t.Fatalf("staging dir %s after the release holds %v, want it kept, empty", p, got)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 || len(rep.Problems) != 0 {
		t.Fatalf("reconcile with the staging dirs kept = %+v, %v; want nothing to do", rep, err)
	}
	h.mem.ResetCalls()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if got, ok := h.mem.StagingPath(h.externalID("v")); !ok || got != v {
		t.Fatalf("staged again at %q (%v), want %s", got, ok, v)
	}
	h.release("v", "b")

	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(v); !os.IsNotExist(err) {
		t.Errorf("staging dir of the deleted volume: %v, want it gone", err)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "w", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Dir(w)); !os.IsNotExist(err) {
		t.Errorf("the plugin's staging dir after its last volume was deregistered: %v, want it gone", err)
	}
	// A plugin's directory left behind (a removal that could not be done then) goes with it.
	if err := os.MkdirAll(filepath.Dir(w), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Dir(w)); !os.IsNotExist(err) {
		t.Errorf("the plugin's staging dir after it was deregistered: %v, want it gone", err)
	}
}

// A symlink planted in place of a kept staging directory is refused, naming it, before
// NodeStageVolume is sent, and nothing is made where it points.
func TestSymlinkPlantedInPlaceOfTheKeptStagingDir(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("vol"))
		h.claim(ClaimRequest{VolumeID: "vol", Alloc: "a"})
		h.release("vol", "a")
		link := stagingPath(h.dir, "mem", "vol")
		elsewhere := t.TempDir()
		if err := os.Remove(link); err != nil {
			t.Fatalf("the kept staging dir: %v", err)
		}
		if err := os.Symlink(elsewhere, link); err != nil {
			t.Fatal(err)
		}
		h.mem.ResetCalls()
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "vol", Alloc: "b"})
		var se *symlinkError
		if !errors.As(err, &se) || se.Component != link || !strings.Contains(err.Error(), link+" is a symlink") {
			t.Fatalf("claim = %v, want a refusal naming the symlink %s", err, link)
		}
		if n := h.mem.CallCount(csi.RPCNodeStageVolume); n != 0 {
			t.Errorf("NodeStageVolume sent %d time(s) onto the planted symlink", n)
		}
		if got := entries(t, elsewhere); len(got) != 0 {
			t.Errorf("made where the symlink points: %v", got)
		}
	})
}

// mountFree proves a path free of mounts without the mount table only when it is gone or an
// empty directory that is not a mount point; anything else is left to the table. Real mounts,
// as root.
func TestMountFree(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	dir := hostpathtest.MountDir(t)
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o750); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mountAt := func(p string) {
		if err := unix.Mount("tmpfs", p, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
	}
	empty := mk("empty")
	withFile := mk("file")
	if err := os.WriteFile(filepath.Join(withFile, "data"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mountedEmpty := mk("mounted") // an empty tmpfs mounted on it: empty, but a mount root
	mountAt(mountedEmpty)
	below := mk("below")
	mountAt(mk("below/globalmount"))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(empty, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{filepath.Join(dir, "gone"), true},
		{filepath.Join(dir, "gone", "deeper"), true},
		{empty, true},
		{withFile, false},
		{mountedEmpty, false},
		{below, false},
		{link, false},
	} {
		if got := mountFree(tt.path); got != tt.want {
			t.Errorf("mountFree(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// A plugin that answers NodeUnstageVolume with success but leaves a bind mount of an empty
// directory on the kept staging directory: the directory is empty, which alone would prove it
// free of mounts, but it is a mount root, so the release reads the kernel's table, finds the
// mount and holds the claim until it is gone. Real mounts, as root.
func TestReleaseKeepsAnEmptyBindMountLeftOnTheKeptStagingDir(t *testing.T) {
	t.Parallel()
	h, staging, _ := claimedOnKernelMounts(t)
	empty := t.TempDir()
	h.afterFirstUnstage(func() {
		if err := unix.Mount(empty, staging, "", unix.MS_BIND, ""); err != nil {
			t.Errorf("bind mount %s on %s: %v", empty, staging, err)
		}
	})
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), staging+" is still mounted") {
		t.Fatalf("release with an empty directory bind-mounted on %s = %v, want it held as still mounted", staging, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims = %+v, want the claim held", live)
	}
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v", live)
	}
	if got := entries(t, staging); len(got) != 0 {
		t.Errorf("staging dir after reconcile holds %v, want it kept, empty", got)
	}
}

// A process that died between a volume's delete commit and the removal of its staging
// directory leaves that directory, empty. The same volume ID registered again stages there,
// releases, and its delete removes it and the plugin's directory.
func TestStagingDirLeftByADeleteThatDiedIsReused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.release("v", "a")
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatal(err)
	}
	staging := stagingPath(h.dir, "mem", "v")
	if err := os.MkdirAll(staging, 0o700); err != nil { // as the dead process left it
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile with the dead delete's staging dir left = %+v, %v; want no problem", rep, err)
	}
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if got, ok := h.mem.StagingPath(h.externalID("v")); !ok || got != staging {
		t.Fatalf("staged at %q (%v), want %s", got, ok, staging)
	}
	h.release("v", "b")
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Dir(staging)); !os.IsNotExist(err) {
		t.Errorf("the plugin's staging dir after its only volume's delete: %v, want it gone", err)
	}
}

// A volume deleted while a claim of it runs: whichever takes the volume's lock first wins, and
// a deleted volume leaves no staging directory behind, whatever the claim did.
func TestDeleteRacingAClaimLeavesNoStagingDir(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for i := range 12 {
		id := fmt.Sprintf("v%d", i)
		h.create(volume(id))
		var claimErr, deleteErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, claimErr = h.e.Claim(h.ctx, ClaimRequest{VolumeID: id, Alloc: "a"}) })
		wg.Go(func() { deleteErr = h.e.DeleteVolume(h.ctx, id) })
		wg.Wait()
		staging := stagingPath(h.dir, "mem", id)
		switch {
		case claimErr == nil && deleteErr == nil:
			t.Fatalf("%s: both the claim and the delete succeeded", id)
		case deleteErr == nil:
			if _, err := os.Lstat(staging); !os.IsNotExist(err) {
				t.Errorf("%s deleted (the claim: %v): its staging dir: %v, want it gone", id, claimErr, err)
			}
		case claimErr == nil:
			h.release(id, "a")
			if err := h.e.DeleteVolume(h.ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(staging); !os.IsNotExist(err) {
				t.Errorf("%s deleted after its claim: its staging dir: %v, want it gone", id, err)
			}
		default:
			t.Fatalf("%s: the claim (%v) and the delete (%v) both failed", id, claimErr, deleteErr)
		}
	}
}
