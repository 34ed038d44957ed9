package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestBlockTargetBoundFromAFileInsideAnotherVolumesMountedTargetIsRefused: through a plugin that
// does not stage (no STAGE_UNSTAGE_VOLUME: it mounts each file-system claim's volume right at
// its target), file-system volume w is published for alloc b, and w's alloc keeps a disk image
// in it (w/disk.img). The plugin then answers NodePublishVolume OK for block volume v having
// bind-mounted that file at v's target (a file-backed block plugin resolving the wrong backing
// file). checkTarget takes a regular file at a block target as "a file standing for" the
// device, and ownDirectory compares it with other volumes' targets by identity only (the
// target itself, TestTargetBoundFromAnotherClaimsTargetIsRefused) and looks inside other
// volumes' *stagings* only (inOtherStaging): a file inside another volume's mounted target,
// where a plugin that does not stage has that volume's data, passes. v's claim is recorded
// published, exit 0, and alloc a writes its raw blocks over w's file, w's data. Correct: refused
// as a bad answer naming volume "w" (the file is inside its target), and v's claim rolled back.
// Real mounts, as root.
// Found by helper review83 (block).
func TestBlockTargetBoundFromAFileInsideAnotherVolumesMountedTargetIsRefused(t *testing.T) {
	t.Parallel()
	var wTarget string
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.Node.StageUnstageVolume = false
		c.PublishFrom = func(_, target string) string {
			if strings.Contains(target, "/publish/a/v/") && wTarget != "" {
				return filepath.Join(wTarget, "disk.img") // a file of w's, inside w's mounted target
			}
			return ""
		}
	})
	h.create(volume("w", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}))
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	w := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	t.Cleanup(func() { h.release("w", "b") })
	wTarget = w.TargetPath
	image := filepath.Join(w.TargetPath, "disk.img")
	if err := os.WriteFile(image, []byte("alloc b's own data, in volume w"), 0o600); err != nil {
		t.Fatalf("premise: writing into w's published target: %v", err)
	}

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		t.Cleanup(func() { h.release("v", "a") })
		werr := os.WriteFile(cl.TargetPath, []byte("alloc a's raw blocks for v"), 0)
		held, _ := os.ReadFile(image)
		t.Fatalf("block claim of v recorded published at %s, a bind of %s, a file inside volume w's published target (alloc b's): "+
			"a write through v's target: %v; w's file now holds %q: want it refused naming volume \"w\", and rolled back", cl.TargetPath, image, werr, held)
	}
	h.wantRefused(err, `volume "w"`)
	if !errors.Is(err, errBadAnswer) || !strings.Contains(err.Error(), "target") {
		t.Errorf("refusal: %v; want it a bad answer naming w's target", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("after the refusal: claims of v %+v left; want the claim rolled back", live)
	}
	if held, _ := os.ReadFile(image); string(held) != "alloc b's own data, in volume w" {
		t.Errorf("w's file holds %q after the refusal; want it untouched", held)
	}
}

// TestReadClaimOfABlockVolumeAdvisedForAReadOnlyVolumeMountIsNotWritable: a write claim of
// block volume v with a read_only volume_mount is refused (readOnlyBlockBinds), advising "claim
// it to read (read_only = true in the group's volume block), which the plugin publishes
// read-only". Followed, the read claim is published through a plugin that honours readonly the
// way a bind can (the device bind-mounted read-only at the target, as volctl's own test plugin
// and many real ones do), and checkTarget asks nothing of a block claim's target about
// read-only ("readonly is the plugin's to keep"), where it refuses a read claim's file-system
// target mounted read-write (TestReadClaimPublishedReadWriteIsRefused). A read-only mount
// does not stop writes to a device file (the very reason of the refusal), so the alloc holding
// the volume only for reading, with a read_only volume_mount, opens the device for writing and
// writes the volume: the advice leads to exactly what it was given to avoid, and a reader
// writes beside the volume's writer. Correct: a read claim of a block volume whose target is a
// writable device (BLKROGET on the device says read-write) is refused as a bad answer
// ("published read-write"), and rolled back, as the file-system one is; or the advice is not
// given. Real mounts and a loop device, as root.
// Found by helper review83 (block).
func TestReadClaimOfABlockVolumeAdvisedForAReadOnlyVolumeMountIsNotWritable(t *testing.T) {
	t.Parallel()
	dev, backing := loopDevice(t)
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(staging, target string) string { return dev }
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	dest := filepath.Join(hostpathtest.MountDir(t), "alloc", "disk")
	bind := spec.VolumeMount{Volume: "v", Destination: dest, ReadOnly: true, PropagationMode: spec.PropagationPrivate}

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice, Binds: []spec.VolumeMount{bind}})
	if err == nil || !strings.Contains(err.Error(), "claim it to read") {
		t.Fatalf("premise: write claim with a read-only volume_mount of a block volume: %v, want it refused advising a read claim", err)
	}

	// The advice, followed.
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice, ReadOnly: true, Binds: []spec.VolumeMount{bind}})
	if err != nil {
		// Refused as the plugin's bad answer, saying the device is writable, and rolled back:
		// no claim left, the device as it was.
		if !errors.Is(err, errBadAnswer) || !strings.Contains(err.Error(), "block device left writable") {
			t.Fatalf("read claim, as the refusal advised: %v; want it refused as a bad answer, the device left writable", err)
		}
		if live := h.liveClaims("v"); len(live) != 0 {
			t.Errorf("after the refusal: claims %+v left; want the read claim rolled back", live)
		}
		return
	}
	t.Cleanup(func() { h.release("v", "a") })
	for _, path := range []string{dest, cl.TargetPath} {
		refused, werr, serr, held := writtenThrough(t, path, backing, []byte("written by the reader"))
		if refused {
			continue
		}
		t.Fatalf("read claim of block volume v (made as the refusal of the read-only volume_mount advised) published at %s, its volume_mount %s read_only: "+
			"%s opened for writing and written (write: %v, sync: %v); the volume's device now begins %q: want the read claim refused as published writable, and rolled back",
			cl.TargetPath, dest, path, werr, serr, held)
	}
}

// TestReadClaimOfABlockVolumeWhoseDeviceIsReadOnlyIsPublished: the check of a read claim's
// block target (blockTargetWritable) refuses a writable device, not every block read claim: a
// plugin that publishes a device whose read-only flag is set (BLKROSET, as a plugin keeping
// readonly for a block volume does) has the read claim published, its volume_mount bound, and
// the device refuses the alloc's writes.
func TestReadClaimOfABlockVolumeWhoseDeviceIsReadOnlyIsPublished(t *testing.T) {
	t.Parallel()
	dev, _ := loopDevice(t)
	setReadOnly := func(on int) {
		f, err := os.Open(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.IoctlSetPointerInt(int(f.Fd()), 0x125d, on); err != nil { // BLKROSET
			t.Fatalf("BLKROSET %s: %v", dev, err)
		}
	}
	setReadOnly(1)
	t.Cleanup(func() { setReadOnly(0) })
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(staging, target string) string { return dev }
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	dest := filepath.Join(hostpathtest.MountDir(t), "alloc", "disk")
	bind := spec.VolumeMount{Volume: "v", Destination: dest, ReadOnly: true, PropagationMode: spec.PropagationPrivate}
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice, ReadOnly: true, Binds: []spec.VolumeMount{bind}})
	if err != nil {
		t.Fatalf("read claim of a block volume published as a read-only device: %v; want it published", err)
	}
	t.Cleanup(func() { h.release("v", "a") })
	for _, path := range []string{dest, cl.TargetPath} {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil { // the open may pass, the write may not
			_, err = f.WriteAt([]byte("written by the reader"), 0)
			_ = f.Close()
		}
		if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EROFS) && !errors.Is(err, unix.EPERM) {
			t.Errorf("write through %s: %v; want it refused by the read-only device", path, err)
		}
	}
}

// writtenThrough opens path, a block volume's device file as an alloc is handed it, for writing
// and writes data at its start: refused says the open was (EROFS, EACCES or EPERM); otherwise
// the write's and sync's errors, and what the volume's backing file begins with after them.
func writtenThrough(t *testing.T, path, backing string, data []byte) (refused bool, werr, serr error, held []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, unix.EROFS) || errors.Is(err, os.ErrPermission) {
		return true, nil, nil, nil
	}
	if err != nil {
		t.Fatalf("open %s for writing: %v, want EROFS", path, err)
	}
	_, werr = f.WriteAt(data, 0)
	serr = f.Sync()
	_ = f.Close()
	held = make([]byte, len(data))
	if b, err := os.Open(backing); err == nil {
		_, _ = b.ReadAt(held, 0)
		_ = b.Close()
	}
	return false, werr, serr, held
}
