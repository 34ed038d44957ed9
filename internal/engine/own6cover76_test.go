package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// tableReadMounts is the kernel's table as volctl reads it on a kernel without statmount(2)
// (before Linux 6.8): MountRoots from one read of the table (mountRootsFromTable), every other
// answer the kernel's.
type tableReadMounts struct{ kernelMounts }

func (tableReadMounts) MountRoots(paths ...string) (map[string]mountRoot, error) {
	return mountRootsFromTable(paths)
}

// TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverBesideAPropagationCopy: the state
// dir's publish directory is a shared mount bound over itself (`mount --bind publish publish`
// on a shared mount, the kubelet idiom), so every mount made at a target inside it is made
// twice, a propagation copy on the hidden lower mount (its parent another mount of the same
// point). A hand makes the target's own mount private and mounts a tmpfs over it, and the alloc
// writes into it. On a kernel without statmount every cover check reads the table
// (mountRootsFromTable), whose topmost is the last of stacked(): stacked follows the chain of
// the first bottom it meets (the volume's mount, then the cover) and puts the unreached hidden
// copy after it, so the "topmost" is the hidden copy, which shows the volume: the release takes
// the target for the volume's own mount, sends NodeUnpublishVolume, and the plugin unmounts the
// cover, the alloc's file gone (before this session, the last listed, the cover, was topmost).
// Correct: the topmost at a path is the top of the chain the path leads to (the one whose
// bottom is mounted on the mount visible at the parent directory, or the path's mount ID as
// TopParentAt reads it); the release refuses, naming the cover, and the file stays.
// Found by helper review76 (own6).
// Found by helper review76 (own6).
func TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverBesideAPropagationCopy(t *testing.T) {
	t.Parallel()
	h, cl, written := coveredBesideAPropagationCopy(t)
	h.e.cfg.Mounts = tableReadMounts{}
	_, rerr := h.e.Release(h.ctx, "v", "a")
	if _, err := os.Stat(written); err != nil {
		t.Errorf("release of v by a on a kernel without statmount (err %v) unmounted the tmpfs mounted by hand over the target %s, "+
			"and with it the file the alloc wrote there (%v): the hidden propagation copy of the volume's mount was taken for the topmost; "+
			"want the release refused, the cover named", rerr, cl.TargetPath, err)
	}
	if rerr == nil || !strings.Contains(rerr.Error(), cl.TargetPath) {
		t.Errorf("release of v by a over the covered target %s = %v; want it refused naming the target", cl.TargetPath, rerr)
	}
}

// TestCoverBesideAPropagationCopyIsCountedOnce: the target of
// TestReleaseOnAKernelWithoutStatmountDoesNotUnmountACoverBesideAPropagationCopy, on this
// kernel (statmount: the cover is seen). One tmpfs is mounted over the volume's mount, but the
// refusal says "has 2 mount(s) stacked over the one NodePublishVolume made ... unmount them
// (`umount TARGET`, 2 times)": StackAt orders the stack by stacked(), the hidden propagation
// copy (which shows the volume) after the cover, and coverOf counts from the copy's place. The
// advice followed unmounts the cover and then the volume's own mount from under the alloc (the
// table-order stack before this session counted one). Correct: the count is of the mounts over
// the volume's mount on the chain the path leads to: once.
// Found by helper review76 (own6).
// Found by helper review76 (own6).
func TestCoverBesideAPropagationCopyIsCountedOnce(t *testing.T) {
	t.Parallel()
	h, cl, _ := coveredBesideAPropagationCopy(t)
	_, rerr := h.e.Release(h.ctx, "v", "a")
	if rerr == nil || !strings.Contains(rerr.Error(), cl.TargetPath) {
		t.Fatalf("premise: release of v by a over the covered target %s = %v; want it refused naming the target", cl.TargetPath, rerr)
	}
	if !strings.Contains(rerr.Error(), "has 1 mount(s) stacked") || !strings.Contains(rerr.Error(), ", once)") {
		t.Errorf("release of v by a, one tmpfs over the target %s: %v\nwant one mount said stacked over the volume's, its umount once", cl.TargetPath, rerr)
	}
}

// coveredBesideAPropagationCopy makes the state dir's publish directory a shared tmpfs bound
// over itself (the kubelet idiom), so that the plugin's mount at alloc a's target of volume v is
// made twice: on the bind, and a propagation copy on the hidden tmpfs below it. The target's own
// mount is then made private and a tmpfs mounted over it by hand, not propagated to the copy,
// and a file written there: it returns the harness, the claim and the file.
func coveredBesideAPropagationCopy(t *testing.T) (*harness, ClaimInfo, string) {
	t.Helper()
	h := withASharedPublishDirBoundOverItself(t)
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	t.Cleanup(func() { _ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH) })
	// Counted in the table itself: StackedMounts counts the layers the path shows, the copy none.
	if all, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != cl.TargetPath, false }); err != nil || len(all) != 2 {
		t.Fatalf("premise: the table lists %d mounts at the target %s (%v); want the plugin's and its propagation copy", len(all), cl.TargetPath, err)
	}
	// The hand's cover, over the target's own mount made private: not propagated to the copy.
	if err := unix.Mount("", cl.TargetPath, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make the target %s private: %v", cl.TargetPath, err)
	}
	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target %s: %v", cl.TargetPath, err)
	}
	written := filepath.Join(cl.TargetPath, "written-by-the-alloc")
	if err := os.WriteFile(written, []byte("the alloc's"), 0o600); err != nil {
		t.Fatal(err)
	}
	return h, cl, written
}

// TestVolumeStatusOfManyCoveredClaimsIsBoundedAsAWhole: markCovered bounds its look at each
// covered target at viewLookBound, but one after another: a volume whose n claims' targets are
// covered by file systems that do not answer (one NFS server gone, its mounts over each target)
// holds `volume status` n times 2 s (100 claims: over three minutes, each dashboard refresh as
// long), and leaves one goroutine blocked per claim per refresh. Correct: the view waits for its
// looks together, at most about the bound once, those that did not answer said so.
// Found by helper review76 (own6).
// Found by helper review76 (own6).
func TestVolumeStatusOfManyCoveredClaimsIsBoundedAsAWhole(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	const n = 5
	var targets []string
	for i := range n {
		cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: fmt.Sprintf("a%d", i)})
		if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mount a tmpfs over the target %s: %v", cl.TargetPath, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH) })
		targets = append(targets, cl.TargetPath)
	}
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	h.e.cfg.Mounts = hungStack{gate: gate}
	start := time.Now()
	v, err := h.e.VolumeShown(h.ctx, "v")
	took := time.Since(start)
	if err != nil || len(v.Claims) != n {
		t.Fatalf("volume status of v = %+v, %v; want its %d claims", v.Claims, err, n)
	}
	for _, c := range v.Claims {
		if !strings.Contains(c.Covered, "did not answer") {
			t.Errorf("volume status: claim of alloc %q covered %q; want the look said not answered", c.Alloc, c.Covered)
		}
	}
	if limit := 2*viewLookBound + time.Second; took > limit {
		t.Errorf("volume status of v with %d covered targets (%v) that do not answer took %s, the bound of %s waited once per claim; want it bounded as a whole (under %s)",
			n, targets, took.Round(100*time.Millisecond), viewLookBound, limit)
	}
}

// withASharedPublishDirBoundOverItself is a kernel harness with volume v, its state dir's publish
// directory a shared tmpfs bound over itself (the kubelet idiom): each target mount made there
// shows twice in the table, the mount and a hidden propagation copy.
func withASharedPublishDirBoundOverItself(t *testing.T) *harness {
	t.Helper()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	publish := filepath.Join(h.dir, publishDir)
	if err := os.MkdirAll(publish, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", publish, "tmpfs", 0, "size=1m,mode=0750"); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v", publish, err)
	}
	t.Cleanup(func() {
		for range 4 {
			_ = unix.Unmount(publish, unix.MNT_DETACH)
		}
	})
	if err := unix.Mount("", publish, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", publish, err)
	}
	if err := unix.Mount(publish, publish, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s over itself: %v", publish, err)
	}
	return h
}
