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

// TestBlockTargetBoundFromAnotherNodeOfAnotherVolumesDeviceIsRefused: block volume w is
// published for alloc b, its target the device /dev/loopN bind-mounted. A plugin then answers
// NodePublishVolume OK for block volume v having bind-mounted at v's target a device file of
// the same device made elsewhere (a node with the same major:minor: a plugin that makes its own
// nodes with mknod, as TopoLVM does, or /dev/mapper's nodes beside /dev/dm-N, resolving the
// wrong volume). ownDirectory refuses a bind of w's target itself (the same file:
// TestTargetBoundFromAnotherClaimsTargetIsRefused) and a device whose file system another
// volume's staging has mounted (rdev against the staging's device:
// TestTargetBoundFromInsideAnotherVolumesStagingIsRefused), but compares another volume's
// block target by file identity alone: v's claim is recorded published (exit 0), and allocs a
// and b write one device as two volumes, each overwriting the other's data. Correct: a block
// target whose device (rdev) is the device another volume's published target shows is refused
// as a bad answer naming volume "w", and the claim rolled back. Real mounts and a loop device,
// as root.
// Found by helper review79 (block).
func TestBlockTargetBoundFromAnotherNodeOfAnotherVolumesDeviceIsRefused(t *testing.T) {
	t.Parallel()
	dev, _ := loopDevice(t)
	rdev := deviceNumber(t, dev)
	// Another node of the same device, as a plugin that makes its own nodes has it.
	node := filepath.Join(t.TempDir(), "node")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, rdev); err != nil {
		t.Fatalf("mknod %s: %v", node, err)
	}
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(_, target string) string {
			switch {
			case strings.Contains(target, "/publish/b/w/"):
				return dev // w's own device
			case strings.Contains(target, "/publish/a/v/"):
				return node // w's device again, through another node
			}
			return ""
		}
	})
	capability := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}
	h.create(volume("w", capability))
	h.create(volume("v", capability))
	w := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b", AttachmentMode: spec.BlockDevice})
	t.Cleanup(func() { h.release("w", "b") })

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		t.Cleanup(func() { h.release("v", "a") })
		seen := make([]byte, 16)
		werr := os.WriteFile(cl.TargetPath, []byte("v's own blocks.."), 0)
		if f, oerr := os.Open(w.TargetPath); oerr == nil {
			_, _ = f.Read(seen)
			_ = f.Close()
		}
		t.Fatalf("block claim of v recorded published at %s, a node of %s, the device volume w's claim (alloc b) is published from at %s "+
			"(a write through v's target: %v; w's device now begins %q): want it refused as another volume's device, naming volume \"w\", and rolled back",
			cl.TargetPath, dev, w.TargetPath, werr, seen)
	}
	h.wantRefused(err, `volume "w"`)
	if !strings.Contains(err.Error(), "another device node of it") {
		t.Errorf("refusal %v does not say the target is another node of volume w's device", err)
	}
	if st, ierr := h.e.ClaimInfo(h.ctx, "v", "a"); ierr == nil && st.State == "published" {
		t.Errorf("v's claim after the refusal: %+v; want it rolled back", st)
	}
}
