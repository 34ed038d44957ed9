package engine

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestClaimAgainOfABlockClaimWithMountOptionsIsNotAdvisedARelease: alloc "a" holds a claim
// of a block-device volume, and claims it again with --fs-type (a script that passes the same
// flags to every claim, say). The fresh claim with mount options is refused as invalid
// ("mount options do not apply to a block device", TestBlockClaimWithMountOptionsIsRefused),
// but the claim again is a conflict "published with other mount options (it has: none)",
// advising `volctl volume release` first: followed, the alloc's live device is unpublished
// from under it, and the claim made again is then refused as invalid all the same. Correct:
// the claim again is refused as the fresh claim is (invalid: mount options do not apply to a
// block device), never advising the release of the claim held.
// Found by helper review77 (block).
func TestClaimAgainOfABlockClaimWithMountOptionsIsNotAdvisedARelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "xfs"}})
	if err == nil {
		t.Fatalf("claim again with fs_type xfs of a block claim: handed the claim held; want it refused as invalid")
	}
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "release") {
		// Follow the advice, to show where it leads.
		h.release("v", "a")
		_, again := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "xfs"}})
		t.Fatalf("claim again with fs_type xfs of a held block claim: %v\nwant it refused as invalid (mount options do not apply to a block device), not a conflict advising a release: "+
			"followed, the release unpublished the alloc's device, and the claim made again was refused: %v", err, again)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Fatalf("claims after the refusal: %+v, want the one held", live)
	}
}

// TestBlockTargetBoundFromACharacterDeviceIsRefused: a block plugin whose NodePublishVolume
// answers OK having bind-mounted a character device at the claim's target (/dev/zero here; a
// plugin that resolves the wrong node, /dev/nvme0, the controller's character device, for
// /dev/nvme0n1, or a stand-in /dev/null) leaves a target that is a mount point and not a
// directory, which every check of checkTarget passes: the block claim is recorded published,
// exit 0, and the alloc writes its data into a device that discards it (what it reads back is
// zeros). A block volume is published as a block device (CSI: access_type block); a target
// showing a character device is not the volume. Correct: refused as a bad answer naming the
// plugin, the target and what it is (a character device), and the claim rolled back. Real
// mounts, as root.
// Found by helper review77 (block).
func TestBlockTargetBoundFromACharacterDeviceIsRefused(t *testing.T) {
	t.Parallel()
	var st unix.Stat_t
	if err := unix.Stat("/dev/zero", &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Fatalf("stat /dev/zero: %v (mode %o), want a character device", err, st.Mode)
	}
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.PublishFrom = func(staging, target string) string { return "/dev/zero" }
	})
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if err == nil {
		t.Cleanup(func() { h.release("v", "a") })
		werr := os.WriteFile(cl.TargetPath, []byte("the alloc's data"), 0)
		back := make([]byte, 16)
		if f, err := os.Open(cl.TargetPath); err == nil {
			_, _ = f.Read(back)
			_ = f.Close()
		}
		t.Fatalf("block claim recorded published at %s, a bind of the character device /dev/zero (a write through it: %v; read back: %q): "+
			"want it refused, the target not being a block device", cl.TargetPath, werr, back)
	}
	for _, want := range []string{`plugin "mem"`, "character device"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim = %v\nwant it saying %q", err, want)
		}
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the refusal = %+v, want none", live)
	}
}

// TestNodeExpandAtABlockVolumesStagingPathSaysItIsABlockVolume: a block-device volume staged
// here whose claim's NodePublishVolume keeps failing (held for reconcile) is expanded, and its
// node step is sent at the staging path (TestNodeExpansionAtStagingPath) with no
// volume_capability, though every claim of the volume is a block-device one. CSI has a plugin
// tell a block volume from a mounted one by that field and, without it, "determine access_type
// from the given volume_path": a staging path is a directory, so the raw device is taken for a
// mounted file system and a file-system resize run on it (on whatever the alloc wrote to its
// device). Correct: the capability of the volume's claims (access_type block) is sent with
// NodeExpandVolume at the staging path, as it is at a claim's target.
// Found by helper review77 (block).
func TestNodeExpandAtABlockVolumesStagingPathSaysItIsABlockVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice}); err == nil {
		t.Fatal("premise: claim with a failing NodePublishVolume succeeded")
	}
	st, ok := h.staging("v")
	if !ok || !st.Staged {
		t.Fatalf("premise: staging %+v, want the volume staged", st)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].AttachmentMode != spec.BlockDevice {
		t.Fatalf("premise: claims %+v, want alloc a's block claim held", live)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatal(err)
	}
	reqs := h.nodeExpands()
	if len(reqs) != 1 || reqs[0].VolumePath != st.StagingPath {
		t.Fatalf("premise: NodeExpandVolume requests %+v, want one at the staging path %s", reqs, st.StagingPath)
	}
	if c := reqs[0].Capability; c == nil || c.Capability.AttachmentMode != spec.BlockDevice {
		t.Fatalf("NodeExpandVolume at block volume v's staging path %s sent with volume_capability %+v; want access_type block (the capability of its claims): "+
			"without it the plugin takes the path, a directory, for a mounted file system and resizes one on the raw device", st.StagingPath, c)
	}
}
