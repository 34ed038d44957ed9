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

// remountingTargetReadOnly serves h's plugin again with every NodePublishVolume answered OK
// and its target then remounted read-only, as a plugin whose file system came up with
// errors=remount-ro, or one that mixes up the flag, leaves it.
func remountingTargetReadOnly(t *testing.T, h *harness) {
	t.Helper()
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			if err == nil && filepath.Base(info.FullMethod) == csi.RPCNodePublishVolume {
				target := req.(interface{ GetTargetPath() string }).GetTargetPath()
				if merr := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); merr != nil {
					return nil, merr
				}
			}
			return resp, err
		}))
}

// A plugin that answers NodePublishVolume OK for a write claim (readonly false, no "ro" mount
// flag) but leaves the target mounted read-only: the claim is refused, naming the plugin and
// the read-only target, and rolled back. Before, checkTarget held a read claim to a read-only
// mount but took the plugin's word for a write claim: recorded published, the alloc was handed
// a target it could not write, holding the volume's one writer slot (what the spec warns of
// when a user's "ro" flag makes it). Real mounts, as root. Found by helper review61.
func TestWriteClaimMountedReadOnlyByThePluginIsRefused(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	remountingTargetReadOnly(t, h)

	claimRefusedSaying(t, h, "a read-only mount", `plugin "mem"`, "mounted read-only", "holds the volume as its writer")
}

// claimRefusedSaying claims volume v for alloc a, which checkTarget must refuse, the target
// being what: the error says each of wants, and no claim is left. Claimed, a write through the
// target says where it went.
func claimRefusedSaying(t *testing.T, h *harness, what string, wants ...string) {
	t.Helper()
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		werr := os.WriteFile(filepath.Join(cl.TargetPath, "written-by-the-alloc"), []byte("x"), 0o600)
		t.Fatalf("claim recorded published at %s, %s (a write through it: %v); want it refused", cl.TargetPath, what, werr)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim = %v\nwant it saying %q", err, want)
		}
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the refusal = %+v, want none", live)
	}
}

// A write claim whose mount flags ask for "ro" gets the read-only mount it asked for: taken.
func TestWriteClaimAskingReadOnlyMountedSoIsTaken(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	remountingTargetReadOnly(t, h)
	// "noatime,ro": flags joined by commas, as mount(8) reads them (before, refused as a
	// read-only mount no flag asked for).
	for _, flag := range []string{" ro", "noatime,ro"} {
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: []string{flag}}}); err != nil {
			t.Fatalf("write claim with the mount flag %q, mounted read-only: %v", flag, err)
		}
		if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
			t.Fatal(err)
		}
	}
}

// A plugin whose NodeStageVolume answers OK having mounted nothing, and whose NodePublishVolume
// bind-mounts a directory it makes below the staging path (as plugins that publish from
// <staging>/globalmount do) at the target: refused, naming the plugin, the staging path and
// the directory below it. Before, the target was a mount point and not the staging path's own
// file, so neither the mount-point check nor bareStaging saw it: the claim was recorded
// published, the alloc writing on the host's disk under volctl's state dir. Real mounts, as
// root. Found by helper review61.
func TestTargetBoundFromBelowABareStagingIsRefused(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.StageNothing = true
		c.PublishFrom = func(staging, target string) string {
			sub := filepath.Join(staging, "globalmount", "vol")
			if err := os.MkdirAll(sub, 0o750); err != nil {
				return ""
			}
			return sub
		}
	})
	h.create(volume("v"))

	staging := stagingPath(h.dir, "mem", "v")
	claimRefusedSaying(t, h, "a bind of a directory below the bare staging path "+staging,
		`plugin "mem"`, staging, "a directory below it, "+filepath.Join("globalmount", "vol"), "host's disk")
}

// A plugin that stages nothing and publishes from a directory of its own outside the staging
// path, on the same disk (as a host-path plugin whose NodeStageVolume does nothing does), is
// taken: only what lies below the bare staging path is the state dir's disk.
func TestTargetBoundFromThePluginsOwnDirectoryIsTaken(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.StageNothing = true
		c.PublishFrom = func(staging, target string) string {
			if err := os.MkdirAll(data, 0o750); err != nil {
				return ""
			}
			return data
		}
	})
	h.create(volume("v"))
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatalf("claim published from the plugin's own directory %s: %v", data, err)
	}
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatal(err)
	}
}

// A plugin that stages into a subdirectory of the staging path (<staging>/globalmount, a bind
// mount of its own data directory, on the same disk as the state dir: a local/host-path plugin
// on a one-disk host) and publishes from there, the staging path itself not a mount point, did
// stage: the target holds the plugin's directory, not the state dir's disk, and the claim is
// taken. Before (earlier in round 61), findBelow walked into globalmount, which statx answers
// with the mounted directory's device and inode, and took the plugin's own directory for one
// below the bare staging path: refused as if NodeStageVolume had staged nothing. Real mounts,
// as root. Found by helper review61.
func TestTargetBoundFromAMountBelowTheStagingPathIsTaken(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "plugin-data")
	var staged []string
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.MakeStaging = func(staging string) error {
			sub := filepath.Join(staging, "globalmount")
			if err := os.MkdirAll(sub, 0o750); err != nil {
				return err
			}
			if err := os.MkdirAll(data, 0o750); err != nil {
				return err
			}
			if err := unix.Mount(data, sub, "", unix.MS_BIND, ""); err != nil {
				return err
			}
			staged = append(staged, sub)
			return nil
		}
		c.PublishFrom = func(staging, target string) string { return filepath.Join(staging, "globalmount") }
	})
	t.Cleanup(func() {
		for _, sub := range staged {
			_ = unix.Unmount(sub, unix.MNT_DETACH)
		}
	})
	// Its NodeUnstageVolume unmounts what its NodeStageVolume mounted, as the plugin would.
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if filepath.Base(info.FullMethod) == csi.RPCNodeUnstageVolume {
				sub := filepath.Join(req.(interface{ GetStagingTargetPath() string }).GetStagingTargetPath(), "globalmount")
				if err := unix.Unmount(sub, 0); err != nil && err != unix.EINVAL && err != unix.ENOENT {
					return nil, err
				}
			}
			return handler(ctx, req)
		}))
	var a, b unix.Stat_t
	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatal(err)
	}
	if unix.Stat(data, &a) != nil || unix.Stat(h.dir, &b) != nil || a.Dev != b.Dev {
		t.Skipf("the plugin's data dir %s is not on the state dir %s's device", data, h.dir)
	}
	h.create(volume("v"))

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err != nil {
		t.Fatalf("claim of a volume staged at <staging>/globalmount (a mount point, bound from the plugin's own %s) and published from there: %v", data, err)
	}
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "x")); err != nil {
		t.Fatalf("the write did not land in the plugin's directory: %v", err)
	}
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatal(err)
	}
}
