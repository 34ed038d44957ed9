package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// mountingBelowTarget serves h's plugin again so that every NodePublishVolume the
// plugin answers OK (having mounted the volume at the target, as asked) also bind-mounts
// from(target) at <target>/sub, and every NodeUnpublishVolume first takes that mount away
// again, as the plugin that made it would: a plugin whose publish is a recursive bind of a
// staging holding mounts of its own, or a hostile one.
func mountingBelowTarget(t *testing.T, h *harness, from func(target string) string) {
	t.Helper()
	var made []string
	t.Cleanup(func() {
		for _, m := range made {
			_ = unix.Unmount(m, unix.MNT_DETACH)
		}
	})
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			switch filepath.Base(info.FullMethod) {
			case csi.RPCNodeUnpublishVolume:
				target := req.(interface{ GetTargetPath() string }).GetTargetPath()
				_ = unix.Unmount(filepath.Join(target, "sub"), unix.MNT_DETACH)
				return handler(ctx, req)
			case csi.RPCNodePublishVolume:
				resp, err := handler(ctx, req)
				if err != nil {
					return resp, err
				}
				target := req.(interface{ GetTargetPath() string }).GetTargetPath()
				sub := filepath.Join(target, "sub")
				if _, serr := os.Stat(sub); serr != nil {
					return nil, serr // made beforehand by the test
				}
				if merr := unix.Mount(from(target), sub, "", unix.MS_BIND, ""); merr != nil {
					return nil, merr
				}
				made = append(made, sub)
				return resp, nil
			}
			return handler(ctx, req)
		}))
}

// TestStateDirBoundBelowTheTargetIsRefused: a plugin answered NodePublishVolume OK having
// mounted the volume at the target, and also bound volctl's state dir below it (<target>/sub):
// the alloc was handed the state database, every volume's secrets in it, one directory down its
// path. checkTarget refused a target bound from the state dir but looked at the target's own
// mount alone, never at what is mounted below it: the claim was recorded published. Real
// mounts, as root. Found by helper review71.
func TestStateDirBoundBelowTheTargetIsRefused(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	// The mount point below the target, made in the volume itself (its backing directory,
	// which the staging and then the target show).
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "pre"})
	pre := publishPath(h.dir, "pre", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	if err := os.Mkdir(filepath.Join(pre, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.release("v", "pre")
	mountingBelowTarget(t, h, func(string) string { return h.dir })

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		_, serr := os.Stat(filepath.Join(cl.TargetPath, "sub", "volctl.db"))
		h.release("v", "a")
		t.Fatalf("claim recorded published at %s with volctl's state dir %s bound at %s (the state database there: stat %v); want it refused",
			cl.TargetPath, h.dir, filepath.Join(cl.TargetPath, "sub"), serr)
	}
	if !strings.Contains(err.Error(), `plugin "mem"`) {
		t.Errorf("claim = %v\nwant it naming plugin \"mem\"", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the refusal = %+v, want none", live)
	}
}

// TestReadClaimWithAWritableMountBelowTheTargetIsRefused: a read claim whose target the plugin
// mounted read-only, as asked, with the volume bound read-write below it (<target>/sub: a
// recursive bind made read-only leaves the mounts below its top read-write): the alloc, which
// holds the volume for reading beside its one writer, could write it through <target>/sub.
// checkTarget asked statfs of the target's own mount alone. Real mounts, as root. Found by
// helper review71.
func TestReadClaimWithAWritableMountBelowTheTargetIsRefused(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeSingleWriter)))
	w := h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	if err := os.Mkdir(filepath.Join(w.TargetPath, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The writer's target: the volume, read-write.
	mountingBelowTarget(t, h, func(string) string { return w.TargetPath })

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	if err == nil {
		werr := os.WriteFile(filepath.Join(cl.TargetPath, "sub", "written-by-a-reader"), []byte("x"), 0o600)
		h.release("v", "r")
		t.Fatalf("read claim recorded published at %s with the volume read-write at %s (a write through it: %v); want it refused",
			cl.TargetPath, filepath.Join(cl.TargetPath, "sub"), werr)
	}
	if !strings.Contains(err.Error(), `plugin "mem"`) {
		t.Errorf("claim = %v\nwant it naming plugin \"mem\"", err)
	}
	for _, c := range h.liveClaims("v") {
		if c.Alloc == "r" {
			t.Fatalf("read claim left after the refusal: %+v", c)
		}
	}
}

// TestStageMountedOverAnotherVolumesStagingIsNotPublishedAsIt: a plugin answered NodeStageVolume
// OK for volume v having mounted v over the staging path of volume w, staged and in use (a
// plugin that mixes up its volumes' paths, or a hostile one). v's claim is refused (its staging
// path is bare) and rolled back; but v's file system stayed stacked over w's staging, which
// nothing of the claim's checks or of its rollback looked at, and the next claim of w was
// published from it: the alloc handed v's data as w. The join is refused now, naming the
// unmount, and the test follows that advice to w's claim with w's data. Real mounts, as root.
// Found by helper review71.
func TestStageMountedOverAnotherVolumesStagingIsNotPublishedAsIt(t *testing.T) {
	// tries: v's claim tried again after its refusal stacks v over w's staging once more; a
	// first version of the check compared the two topmost mounts, both v's after two tries
	// (found by helper review71, own2 review).
	for _, tries := range []int{1, 2} {
		t.Run(fmt.Sprintf("v claimed %d times", tries), func(t *testing.T) {
			t.Parallel()
			stageMountedOverAnotherVolumesStaging(t, tries)
		})
	}
}

func stageMountedOverAnotherVolumesStaging(t *testing.T, tries int) {
	h := kernelHarness(t, nil)
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	h.create(volume("v"))
	a := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	if err := os.WriteFile(filepath.Join(a.TargetPath, "w-data"), []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	vStaging, wStaging := stagingPath(h.dir, "mem", "v"), stagingPath(h.dir, "mem", "w")
	t.Cleanup(func() {
		for range tries + 2 {
			_ = unix.Unmount(wStaging, unix.MNT_DETACH)
		}
	})
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			if err != nil || filepath.Base(info.FullMethod) != csi.RPCNodeStageVolume ||
				req.(interface{ GetStagingTargetPath() string }).GetStagingTargetPath() != vStaging {
				return resp, err
			}
			// v's file system moved from v's staging path over w's.
			if merr := unix.Mount(vStaging, wStaging, "", unix.MS_BIND, ""); merr != nil {
				return nil, merr
			}
			if merr := unix.Unmount(vStaging, 0); merr != nil {
				return nil, merr
			}
			return resp, nil
		}))

	var verr error
	for range tries {
		_, verr = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "c"})
		t.Logf("claim of v: %v", verr)
	}

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	advised, times := "`umount "+wStaging+"`", "once"
	if tries > 1 {
		times = fmt.Sprintf("%d times", tries)
	}
	if err == nil || !strings.Contains(err.Error(), advised+", "+times) {
		t.Fatalf("claim of w after v's stage went over w's staging %d time(s): %v; want it refused, naming %s, %s", tries, err, advised, times)
	}
	for range tries { // the advice followed
		if merr := unix.Unmount(wStaging, 0); merr != nil {
			t.Fatalf("%s: %v", advised, merr)
		}
	}
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if err != nil {
		t.Fatalf("claim of w after the advised %s, %s: %v", advised, times, err)
	}
	defer h.release("w", "b")
	if _, serr := os.Stat(filepath.Join(b.TargetPath, "w-data")); serr != nil {
		entries, _ := os.ReadDir(b.TargetPath)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("claim of w for alloc b published at %s, which holds %v, not w's w-data (%v): the alloc is handed volume v's file system, which plugin \"mem\" mounted over w's staging %s answering v's NodeStageVolume (v's claim: %v)",
			b.TargetPath, names, serr, wStaging, verr)
	}
}

// TestFirstBelowNamesAMountBelowThePathOnly: the table's answer for a kernel without
// listmount(2) (MountsUnder, the path's own mount among it) names a mount strictly below.
func TestFirstBelowNamesAMountBelowThePathOnly(t *testing.T) {
	if got := firstBelow(map[string]bool{"/a/t": true}, "/a/t"); got != "" {
		t.Errorf("firstBelow of the target's own mount alone = %q, want none", got)
	}
	if got := firstBelow(map[string]bool{"/a/t": true, "/a/t/z": true, "/a/t/b/c": true}, "/a/t/"); got != "/a/t/b/c" {
		t.Errorf("firstBelow = %q, want /a/t/b/c (the first in order)", got)
	}
}

// TestStagingStackedByThePluginsOwnStageIsJoined: a plugin whose NodeStageVolume mounts the
// volume's file system at the staging path and then binds the volume's own directory of it
// (<fs>/vol) over the staging path, two mounts of its own, as it staged it. The first claim is
// published from that staging; the second, joining it, was refused by a first version of the
// staging's check as "another mount stacked over the one it was staged with", which it is not,
// and its advice, `umount <staging>` once, took the plugin's top mount away, the next claim
// then published from the whole file system below it. The mount recorded at the stage is what a
// join compares now. Real mounts, as root. Found by helper review71 (own2 review).
func TestStagingStackedByThePluginsOwnStageIsJoined(t *testing.T) {
	t.Parallel()
	fsDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fsDir, "vol"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fsDir, "other-volumes-data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var staged []string
	t.Cleanup(func() {
		for _, s := range staged {
			for range 3 {
				_ = unix.Unmount(s, unix.MNT_DETACH)
			}
		}
	})
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.MakeStaging = func(staging string) error {
			staged = append(staged, staging)
			if err := unix.Mount(fsDir, staging, "", unix.MS_BIND, ""); err != nil {
				return err
			}
			return unix.Mount(filepath.Join(staging, "vol"), staging, "", unix.MS_BIND, "")
		}
	})
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	defer func() {
		// The plugin's unstage unmounts both its mounts; the fake's, with MakeStaging, neither.
		_ = unix.Unmount(stagingPath(h.dir, "mem", "v"), 0)
		_ = unix.Unmount(stagingPath(h.dir, "mem", "v"), 0)
		h.release("v", "a")
	}()
	if err := os.WriteFile(filepath.Join(a.TargetPath, "v-data"), []byte("v"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if err != nil {
		// The advice followed: `umount <staging>`, once.
		staging := stagingPath(h.dir, "mem", "v")
		uerr := unix.Unmount(staging, 0)
		seen := "(claim after it failed)"
		if c, cerr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "c"}); cerr == nil {
			entries, _ := os.ReadDir(c.TargetPath)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			seen = strings.Join(names, " ")
			h.release("v", "c")
		}
		// Back as the plugin staged it, for the release of a.
		_ = unix.Mount(filepath.Join(staging, "vol"), staging, "", unix.MS_BIND, "")
		t.Fatalf("second claim of v, joining the staging the first claim was published from, as the plugin staged it: %v\n"+
			"want it published as the first was; the advised umount (%v) followed, the next claim's target holds: %s (the whole file system below the plugin's staging, not the volume)",
			err, uerr, seen)
	}
	defer h.release("v", "b")
	if _, serr := os.Stat(filepath.Join(b.TargetPath, "v-data")); serr != nil {
		t.Fatalf("second claim's target %s lacks the first's v-data: %v", b.TargetPath, serr)
	}
}
