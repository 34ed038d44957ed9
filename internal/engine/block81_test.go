package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// ext4OnLoop makes an ext4 file system on a fresh loop device and mounts it on a directory of
// its own; it returns the device and the mount point. The mount is taken down, and the device
// detached, at the end of the test.
func ext4OnLoop(t *testing.T) (dev, mnt string) {
	t.Helper()
	dev, _ = loopDevice(t)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", dev, err, out)
	}
	mnt = filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", dev, mnt, err)
	}
	// Registered after loopDevice's detach, so it runs before it.
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", mnt, err)
		}
	})
	return dev, mnt
}

// TestBlockTargetBoundFromTheDeviceOfAnotherVolumesMountedTargetIsRefused: through a plugin that
// does not stage (no STAGE_UNSTAGE_VOLUME: it mounts each file-system claim's file system right
// at its target), file-system volume w is published for alloc b, its ext4 file system on
// /dev/loopN mounted at b's target. The plugin then answers NodePublishVolume OK for block
// volume v having bind-mounted /dev/loopN itself at v's target (it resolved the wrong device).
// ownDirectory refuses a block target whose device another volume's *staging* has mounted
// (`block && rdev == oid.dev`, TestTargetBoundFromInsideAnotherVolumesStagingIsRefused) and one
// that is another node of another volume's *block* target (blockTargetOfDevice), but never
// compares the device with the file systems mounted at other volumes' file-system targets,
// which is where a plugin that does not stage has another volume's data
// (TestTargetBoundFromAnotherClaimsTargetIsRefused). So v's claim is recorded published, exit
// 0, and alloc a writes raw blocks under w's mounted ext4: w's data, and its file system,
// corrupted by two writers. Correct: refused as a bad answer naming volume "w" (the device of
// the file system mounted at its target), and v's claim rolled back. Real mounts, a loop
// device and ext4, as root.
// Found by helper review81 (block).
func TestBlockTargetBoundFromTheDeviceOfAnotherVolumesMountedTargetIsRefused(t *testing.T) {
	t.Parallel()
	dev, mnt := ext4OnLoop(t)
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.Node.StageUnstageVolume = false
		c.PublishFrom = func(_, target string) string {
			switch {
			case strings.Contains(target, "/publish/b/w/"):
				return mnt // w's file system, on dev
			case strings.Contains(target, "/publish/a/v/"):
				return dev // the device under w's mounted file system
			}
			return ""
		}
	})
	h.create(volume("w", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}))
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	w := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	t.Cleanup(func() { h.release("w", "b") })
	var st unix.Stat_t
	if err := unix.Stat(w.TargetPath, &st); err != nil || st.Dev != uint64(deviceNumber(t, dev)) {
		t.Fatalf("premise: w's target %s: %v (device %d:%d), want w's ext4 on %s mounted there", w.TargetPath, err, unix.Major(st.Dev), unix.Minor(st.Dev), dev)
	}

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		t.Cleanup(func() { h.release("v", "a") })
		t.Fatalf("block claim of v recorded published at %s, a bind of %s, the device whose ext4 file system is volume w's, mounted at alloc b's target %s: "+
			"alloc a would write raw blocks under w's mounted file system; want it refused naming volume \"w\", and rolled back", cl.TargetPath, dev, w.TargetPath)
	}
	h.wantRefused(err, `volume "w"`)
}

// TestBlockTargetBoundFromTheStateDirsDeviceIsRefused: a block plugin answers
// NodePublishVolume OK for block volume v having bind-mounted at the target a device file of
// the device volctl's state dir is on (a plugin resolving the wrong disk: /dev/vda for
// /dev/vdb, or a by-id link to the host's own disk; here a node of that device's number, as a
// plugin making its own nodes has it). checkTarget refuses a block target bound from one of
// the state dir's files (stateFile: "the alloc handed the state database, every volume's
// secrets in it, as its device", TestBlockTargetBoundFromVolctlsOwnFilesIsRefused) and any
// target that would write to the host's disk, but a block target is compared by device only
// with other volumes' stagings and block targets: the claim is recorded published, exit 0,
// and the alloc is handed, read-write, the raw disk that holds volctl's state database (every
// volume's secrets) and the host's file system under it, which its writes corrupt. Correct:
// refused as a bad answer naming the state dir's device (the host's disk, not the volume), and
// the claim rolled back. Nothing is written through the target. Real mounts, as root.
// Found by helper review81 (block).
func TestBlockTargetBoundFromTheStateDirsDeviceIsRefused(t *testing.T) {
	t.Parallel()
	var node string
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(_, target string) string {
			if strings.Contains(target, "/publish/a/v/") {
				return node
			}
			return ""
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(h.dir, &st); err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(t.TempDir(), "disk")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Dev)); err != nil {
		t.Fatalf("mknod %s (the state dir's device, %d:%d): %v", node, unix.Major(st.Dev), unix.Minor(st.Dev), err)
	}
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		t.Cleanup(func() { h.release("v", "a") })
		t.Fatalf("block claim of v recorded published at %s, a bind of a node of device %d:%d, the disk volctl's state dir %s (its database among it) is on: "+
			"the alloc would be handed the host's disk as its volume; want it refused, and rolled back", cl.TargetPath, unix.Major(st.Dev), unix.Minor(st.Dev), h.dir)
	}
	if !strings.Contains(err.Error(), "state dir") || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("claim = %v\nwant it refused naming the state dir's device, and rolled back", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the refusal = %+v, want none", live)
	}
}

// As TestBlockTargetBoundFromTheDeviceOfAnotherVolumesMountedTargetIsRefused, for a device whose
// file system is mounted outside volctl (the host's data disk, resolved by a plugin for the
// volume's): refused naming where, the claim rolled back. Mine, beside the review's two.
func TestBlockTargetBoundFromADeviceMountedElsewhereIsRefused(t *testing.T) {
	t.Parallel()
	dev, mnt := ext4OnLoop(t)
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(_, target string) string {
			if strings.Contains(target, "/publish/a/v/") {
				return dev
			}
			return ""
		}
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		t.Cleanup(func() { h.release("v", "a") })
		t.Fatalf("block claim of v recorded published at %s, a bind of %s, whose ext4 file system is mounted at %s; want it refused naming %s", cl.TargetPath, dev, mnt, mnt)
	}
	if !strings.Contains(err.Error(), "mounted at "+mnt) || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("claim = %v\nwant it refused naming %s, where the device's file system is mounted, and rolled back", err, mnt)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the refusal = %+v, want none", live)
	}
}
