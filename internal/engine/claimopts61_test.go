package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A claim with --fs-type of a volume whose only capability is block-device, --attachment-mode
// not given (the mode comes from the volume), is refused as invalid, saying the options do not
// apply to a block device, as the command line refuses them with an explicit
// `--attachment-mode block-device`; without them it is claimed. Before, the engine dropped them
// without a word: the claim was published, and the same command run again was refused as one
// "published with other mount options (it has: none)". Found by helper review61.
func TestBlockClaimWithMountOptionsIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "xfs"}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "claimed as a block device") || !strings.Contains(err.Error(), "fs_type=xfs") {
		t.Fatalf("claim with fs_type xfs of a block-device volume: %v; want it refused as invalid, the options not applying to a block device", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the refusal: %+v", live)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatalf("claim without mount options: %v", err)
	}
}

// A claim's own mount options (`volume claim --fs-type`, `--mount-flag`) keep the limits a
// spec's mount_options block is held to, which docs/specs.md promises of every string sent to
// a plugin: refused as invalid, nothing sent, the flags never quoted (they may carry
// credentials). Before, sent as given: a 200-byte fs_type, one holding an escape sequence,
// 5000 bytes of mount flags. Found by helper review61.
func TestClaimMountOptionsKeepTheCSILimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, says string
		mo         spec.MountOptions
	}{
		{"fs_type of 200 bytes", "fs_type is 200 bytes long", spec.MountOptions{FSType: strings.Repeat("x", 200)}},
		{"fs_type with an escape", "control character U+001B", spec.MountOptions{FSType: "ext4\x1b[2J"}},
		{"5000 bytes of mount flags", "the 1 mount flags hold 5000 bytes", spec.MountOptions{MountFlags: spec.MountFlags{strings.Repeat("y", 5000)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			mo := tc.mo
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &mo})
			var sent []string
			for _, c := range h.mem.Calls() {
				if c.RPC == csi.RPCNodeStageVolume || c.RPC == csi.RPCNodePublishVolume || c.RPC == csi.RPCControllerPublishVolume {
					sent = append(sent, c.RPC)
				}
			}
			if !errors.Is(err, ErrInvalid) || len(sent) > 0 || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("claim with %s: err %v, plugin sent %v; want refused as invalid saying %q, nothing sent", tc.name, err, sent, tc.says)
			}
			if strings.Contains(err.Error(), "yyyy") {
				t.Errorf("the refusal quotes the mount flags: %.200s", err)
			}
		})
	}
}

// A volume with both a block-device and a file-system capability (block listed first) is
// claimed with --fs-type and no --attachment-mode. `volume claim --help` says the claim takes
// "its first capability that fits"; a block-device capability does not fit a claim that asks
// for a file system type (mount options "do not apply to one"), while the file-system one
// does, and is taken. Before (earlier in round 61, when mount options on a block claim came to
// be refused), the claim was refused, told to drop --fs-type: the way out it named gave the
// alloc a raw device where it asked for an xfs file system. Found by helper review61.
func TestClaimWithFSTypeTakesTheFileSystemCapabilityOfAMixedVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v",
		spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice},
		spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}))
	ci, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "xfs"}})
	if err != nil {
		t.Fatalf("claim with fs_type xfs of a volume with a file-system capability: %v; want it admitted as file-system", err)
	}
	if ci.AttachmentMode != spec.FileSystem {
		t.Fatalf("claim with fs_type xfs: attachment mode %s; want file-system", ci.AttachmentMode)
	}
}
