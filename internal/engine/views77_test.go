package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusOfManyCoveredClaimsIsBoundedAsAWhole: group web's three allocs each hold a
// published claim whose target a file system covers since, and what covers them does not answer
// a look (one NFS server gone, its mounts over each target: hungStack). `volume status` and the
// dashboard's claims wait for such looks together, at most the bound once (coversForView,
// TestVolumeStatusOfManyCoveredClaimsIsBoundedAsAWhole), but `group status` (Groups) and the
// dashboard's groups mark covers in markUnbound, which calls coverForView once per claim, one
// after the other, each waiting the whole bound: a group of n such allocs holds `volctl group
// status` n times 2 s, and every dashboard refresh that long again on top of its claims' bound.
// Correct: the looks of one view are made at once under one bound, as coversForView does for a
// volume's claims; each claim said covered ("did not answer"), its alloc not counted ready.
// Found by helper review77 (views).
func TestGroupStatusOfManyCoveredClaimsIsBoundedAsAWhole(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	const n = 3
	for i := range n {
		h.create(volume(fmt.Sprintf("v[%d]", i), capab(spec.SingleNodeWriter)))
	}
	g := spec.Group{Name: "web", Count: n,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "v", PerAlloc: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	info, err := h.e.RunGroup(h.ctx, g)
	if err != nil {
		t.Fatalf("run group: %v", err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if len(info.Allocs) != n {
		t.Fatalf("run group = %+v; want %d allocs", info, n)
	}
	for _, a := range info.Allocs {
		if len(a.Claims) != 1 {
			t.Fatalf("run group: alloc %s holds %+v; want its claim", a.Name, a.Claims)
		}
		target := a.Claims[0].TargetPath
		if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mount a tmpfs over the target %s: %v", target, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	}
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) }) // before the group's stop (cleanups run last first)
	h.e.cfg.Mounts = hungStack{gate: gate}

	limit := 2*viewLookBound + time.Second
	start := time.Now()
	gs, err := h.e.Groups(h.ctx, "web")
	took := time.Since(start)
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != n {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	for _, a := range gs[0].Allocs {
		if len(a.Claims) != 1 || !strings.Contains(a.Claims[0].Covered, "did not answer") {
			t.Errorf("group status: alloc %s claims %+v; want its claim said covered, the look not answered", a.Name, a.Claims)
		}
	}
	if took > limit {
		t.Errorf("group status of web, %d allocs whose targets are covered by file systems that do not answer, took %s: the bound of %s waited once per claim; "+
			"want the looks bounded as a whole (under %s), as volume status bounds them", n, took.Round(100*time.Millisecond), viewLookBound, limit)
	}

	start = time.Now()
	if _, err := h.e.Dashboard(h.ctx, 10); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > limit {
		t.Errorf("a dashboard refresh with %d claims whose covers do not answer took %s: its claims' looks bounded once, then its group's once per claim again; want it under %s",
			n, took.Round(100*time.Millisecond), limit)
	}
}

// TestGroupStatusIsNotHeldByAVolumeMountDestinationThatDoesNotAnswer: group web's alloc web[0]
// has its volume bound at its volume_mount destination, and a file system that does not answer
// is mounted over that destination since (an NFS share mounted there by hand whose server is
// gone; here a FUSE file system whose daemon never answers). The claim's target is fine, so the
// bounded cover look passes, and markUnbound goes on to bindShows, which opens and stats the
// destination with no bound: `volctl group status web` (Groups) blocks in the kernel for as long
// as the server is gone, and so does every dashboard refresh (Dashboard marks the groups the same
// way), the TUI frozen. The views bound every other look at a mount that may not answer
// (viewLookBound: "a cover that does not answer holds no view"). Correct: the look at a
// destination is bounded too; past the bound the volume_mount is said not to answer (not bound
// as asked, named), the alloc not counted ready, and the view returns.
// Found by helper review77 (views).
func TestGroupStatusIsNotHeldByAVolumeMountDestinationThatDoesNotAnswer(t *testing.T) {
	h, _, dest := boundByOwnGroup(t, false)
	hangOver(t, dest)

	held := groupViewsWithin(h.ctx, h.e, 4*viewLookBound+5*time.Second, func(what string, gs []GroupInfo) {
		for _, g := range gs {
			for _, a := range g.Allocs {
				if !strings.Contains(a.Error, dest) {
					t.Errorf("%s: alloc %s's error %q; want the volume_mount %s, which does not answer, named", what, a.Name, a.Error, dest)
				}
			}
		}
	})
	if held != "" {
		t.Fatalf("%s held (over %s) by a look at the volume_mount destination %s, over which a file system that does not answer is mounted; "+
			"want the look bounded, as the look at a covered target is (%s)", held, 4*viewLookBound+5*time.Second, dest, viewLookBound)
	}
}

// hangOver mounts over path a FUSE file system whose daemon never answers (the test holds
// /dev/fuse and reads nothing from it): whatever looks at it sleeps in the kernel until the
// test's cleanup aborts the connection and unmounts it.
func hangOver(t *testing.T, path string) {
	t.Helper()
	fuse, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("needs /dev/fuse to make a file system that does not answer: %v", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fuse.Fd())
	if err := unix.Mount("volctl-test-hung", path, "fuse", 0, opts); err != nil {
		fuse.Close()
		t.Fatalf("cannot mount a FUSE file system at %s: %v", path, err)
	}
	t.Cleanup(func() {
		fuse.Close() // aborts the connection: the sleepers get ENOTCONN
		_ = unix.Unmount(filepath.Clean(path), unix.MNT_DETACH)
	})
}
