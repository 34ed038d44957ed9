package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A block plugin whose NodeStageVolume answers OK having only made its device file inside the
// staging path (ceph-csi's `<staging>/<volume>`, say) and mounted nothing on it, and whose
// NodePublishVolume bind-mounts that file at the target, leaves a target that is a mount point,
// not a directory, and not the staging path's own file: every check of checkTarget passes it,
// and the block claim is recorded published, its "device" a plain file on the host's disk under
// volctl's state dir. bareStaging's look below a bare staging (findBelow) matches directories
// only, so the file-system twin of this (TestTargetBoundFromBelowABareStagingIsRefused) is
// refused and this one is not. Correct: refused as a bind of what the plugin made below the
// bare staging path, naming the plugin, the staging path and the file, and rolled back. Real
// mounts, as root.
// Found by helper review74.
func TestBlockTargetBoundFromAFileBelowABareStagingIsRefused(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.StageNothing = true
		c.PublishFrom = func(staging, target string) string {
			dev := filepath.Join(staging, "device")
			f, err := os.OpenFile(dev, os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return ""
			}
			_ = f.Close()
			return dev
		}
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	staging := stagingPath(h.dir, "mem", "v")

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		werr := os.WriteFile(cl.TargetPath, []byte("raw blocks"), 0o600)
		held, _ := os.ReadFile(filepath.Join(staging, "device"))
		t.Fatalf("block claim recorded published at %s, a bind of the plain file %s on the state dir's disk (a write through it: %v; the file now holds %q); want it refused",
			cl.TargetPath, filepath.Join(staging, "device"), werr, held)
	}
	for _, want := range []string{`plugin "mem"`, staging, "device", "host's disk"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim = %v\nwant it saying %q", err, want)
		}
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the refusal = %+v, want none", live)
	}
}

// loopDevice attaches a loop device to a fresh 1 MiB backing file and returns the device's path
// and the backing file's; it is detached at the end of the test.
// deviceNumber is block device dev's number, as mknod takes it.
func deviceNumber(t *testing.T, dev string) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		t.Fatalf("stat %s: %v (mode %o), want a block device", dev, err, st.Mode)
	}
	return int(st.Rdev)
}

func loopDevice(t *testing.T) (dev, backing string) {
	t.Helper()
	backing = filepath.Join(t.TempDir(), "backing")
	if err := os.WriteFile(backing, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev, backing
}

// A write claim of a block-device volume with a volume_mount that is read_only (a group's
// `volume_mount { read_only = true }`, docs/specs.md: "mount read-only") is bound at its
// destination as a read-only bind of the device file. A read-only mount does not stop writes
// to a device file on it (the kernel's write check on a mount skips special files, as
// docs/architecture.md says of a block claim's own target), so the alloc that was handed a
// read-only mount opens the device for writing and writes the volume: the promise of
// read_only holds on paper only, and volctl, not the plugin, made that mount. Correct: such a
// volume_mount is refused (as invalid, before anything is sent: read-only for a block volume
// is only the plugin's to keep, through a read claim, `read_only = true` on the volume block),
// or the destination really refuses writes. Real mounts and a loop device, as root.
// Found by helper review74.
func TestReadOnlyVolumeMountOfABlockVolumeIsNotWritable(t *testing.T) {
	t.Parallel()
	dev, backing := loopDevice(t)
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(staging, target string) string { return dev }
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	dest := filepath.Join(hostpathtest.MountDir(t), "alloc", "disk")

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice,
		Binds: []spec.VolumeMount{{Volume: "v", Destination: dest, ReadOnly: true, PropagationMode: spec.PropagationPrivate}}})
	if err != nil {
		if strings.Contains(err.Error(), "read") {
			return // refused, saying why: what the test asks for
		}
		t.Fatalf("claim with a read-only volume_mount of a block volume: %v (want it published with an unwritable destination, or refused saying why)", err)
	}
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "v", "a") })
	refused, werr, serr, held := writtenThrough(t, dest, backing, []byte("written through a read-only volume_mount"))
	if refused {
		return
	}
	t.Fatalf("the volume_mount %s, asked read-only, opened for writing and written (write: %v, sync: %v); the volume's device now begins %q: "+
		"want the volume_mount refused, or its destination refusing writes", dest, werr, serr, held)
}

// A block plugin that publishes a block volume by making the device node at the target
// (mknod of the volume's device, as TopoLVM's NodePublishVolume does for a raw block volume)
// and mounting nothing there was refused "not a mount point (nothing is mounted on it, so the
// claim would write to the host's disk)", which is untrue of a device node: its writes go to a
// device. volctl keeps to taking a block target only as a bind-mounted device, which the mount
// table ties to its source (a node at the target could be any device's, another volume's
// included: nothing here tells), so the claim is still refused and rolled back, but the
// refusal says what the target is and what the plugin must do. Found by helper review74, which
// asked for the node to be taken; the design keeps the refusal (docs/architecture.md).
// Real device node and loop device, as root.
func TestBlockTargetMadeAsADeviceNodeIsRefusedForWhatItIs(t *testing.T) {
	t.Parallel()
	dev, _ := loopDevice(t)
	rdev := deviceNumber(t, dev)
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.MakeTarget = func(target string) error {
			return unix.Mknod(target, unix.S_IFBLK|0o600, rdev)
		}
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		h.release("v", "a")
		t.Fatalf("block claim whose plugin made a device node at the target: published; want it refused (volctl cannot tell which device a node is)")
	}
	if strings.Contains(err.Error(), "host's disk") || !strings.Contains(err.Error(), "block device node") || !strings.Contains(err.Error(), "bind-mounting") {
		t.Errorf("the refusal of a device node at the target: %v; want it named a block device node, and the plugin told to bind-mount the device, not that the claim would write to the host's disk", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("the refused claim is left: %+v", live)
	}
}
