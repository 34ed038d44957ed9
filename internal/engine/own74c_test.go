package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestBlockTargetBoundFromADeviceNodeBelowABareStagingIsTaken: a block plugin whose
// NodeStageVolume makes the volume's device node inside the staging path (mknod of the
// device's number at <staging>/dev, mounting nothing) and whose NodePublishVolume bind-mounts
// that node at the target publishes the device: the target is a mount point whose root is a
// block device node, and a write through it goes to the device. findBelow, which since it
// matches files as well as directories (for a plain file a plugin made below a bare staging),
// matches that node too, and checkTarget refuses the claim "NodeStageVolume staged nothing
// there, so the claim would write to the host's disk": untrue (the write reaches the loop
// device here), and the claim is rolled back, where before the change it was taken. The same
// node made anywhere else on that same disk and bound at the target is taken (checked first
// below), so the refusal is not the design's "a node cannot be told from another device's"
// either. Correct: a device node below the bare staging is not "the host's disk" (findBelow, or
// bareWords, leaves block and character device nodes out, as a device bound from /dev is), and
// the claim is published as the node bound from elsewhere is. Real mounts, mknod and a loop
// device, as root.
// Found by helper review74 (the own review of the change to findBelow).
func TestBlockTargetBoundFromADeviceNodeBelowABareStagingIsTaken(t *testing.T) {
	t.Parallel()
	dev, backing := loopDevice(t)
	rdev := deviceNumber(t, dev)
	// claim publishes a block volume through a plugin that makes the device's node at
	// nodeAt(staging) and bind-mounts it at the target; it returns the claim's target and error.
	claim := func(nodeAt func(staging string) string) (string, error) {
		h := kernelHarness(t, func(c *csitest.MemConfig) {
			c.StageNothing = true
			c.PublishFrom = func(staging, target string) string {
				node := nodeAt(staging)
				if err := unix.Mknod(node, unix.S_IFBLK|0o600, rdev); err != nil && !os.IsExist(err) {
					t.Errorf("mknod %s: %v", node, err)
					return ""
				}
				return node
			}
		})
		h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
		cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
		if err != nil {
			return "", err
		}
		t.Cleanup(func() { h.release("v", "a") })
		return cl.TargetPath, nil
	}
	writesTheDevice := func(target, what string) {
		t.Helper()
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			t.Fatalf("open the target %s for writing: %v", target, err)
		}
		_, werr := f.WriteAt([]byte(what), 0)
		serr := f.Sync()
		_ = f.Close()
		held := make([]byte, len(what))
		b, err := os.Open(backing)
		if err == nil {
			_, err = b.ReadAt(held, 0)
			_ = b.Close()
		}
		if werr != nil || serr != nil || err != nil || string(held) != what {
			t.Fatalf("a write through the target %s (write %v, sync %v) did not reach the loop device's backing file (read %v: %q)", target, werr, serr, err, held)
		}
	}

	// Precondition: the node made beside the state dir, on the same disk, is taken, and a write
	// through the target reaches the device.
	elsewhere := t.TempDir()
	var es, ss unix.Stat_t
	if err := unix.Stat(elsewhere, &es); err != nil {
		t.Fatal(err)
	}
	target, err := claim(func(staging string) string {
		if err := unix.Stat(staging, &ss); err != nil {
			t.Errorf("stat %s: %v", staging, err)
		}
		return filepath.Join(elsewhere, "dev")
	})
	if err != nil {
		t.Fatalf("precondition: a block claim whose target is bound from a device node made in %s: %v; want it taken", elsewhere, err)
	}
	if es.Dev != ss.Dev {
		t.Fatalf("precondition: %s (device %d) is not on the staging path's disk (device %d)", elsewhere, es.Dev, ss.Dev)
	}
	writesTheDevice(target, "bound from beside the state dir")

	target, err = claim(func(staging string) string { return filepath.Join(staging, "dev") })
	if err != nil {
		if strings.Contains(err.Error(), "host's disk") {
			t.Fatalf("a block claim whose target is bound from the volume's device node below the staging path: %v\n"+
				"want it taken, as the same node bound from elsewhere on that disk is: a write through it goes to the device, not to the host's disk", err)
		}
		t.Fatalf("a block claim whose target is bound from the volume's device node below the staging path: %v; want it taken, as the same node bound from elsewhere on that disk is", err)
	}
	writesTheDevice(target, "bound from below the bare staging")
}
