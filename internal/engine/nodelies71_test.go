package engine

import (
	"context"
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
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	h.create(volume("v"))
	a := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	if err := os.WriteFile(filepath.Join(a.TargetPath, "w-data"), []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	vStaging, wStaging := stagingPath(h.dir, "mem", "v"), stagingPath(h.dir, "mem", "w")
	t.Cleanup(func() {
		for range 3 {
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

	_, verr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "c"})
	t.Logf("claim of v: %v", verr)

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	advised := "`umount " + wStaging + "`"
	if err == nil || !strings.Contains(err.Error(), advised) {
		t.Fatalf("claim of w after v's stage went over w's staging: %v; want it refused, naming %s", err, advised)
	}
	if merr := unix.Unmount(wStaging, 0); merr != nil { // the advice: `umount <w's staging>`, once
		t.Fatalf("%s: %v", advised, merr)
	}
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if err != nil {
		t.Fatalf("claim of w after the advised %q: %v", advised, err)
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
