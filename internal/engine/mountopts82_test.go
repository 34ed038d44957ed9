package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestClaimMountOptionsThatAreNotUTF8AreRefusedBeforeAnythingIsSent: a claim's own mount
// options (`volume claim --fs-type`, `--mount-flag`, which a shell passes as any bytes) are
// "held to the limits a spec's are ... invalid, nothing sent" (docs/architecture.md,
// spec.MountOptions.Problem), and a spec's strings are UTF-8, as CSI's must be. A mount flag or
// fs_type that is not UTF-8 passes Problem (ControlIn reads each bad byte as U+FFFD), the claim
// is admitted and driven: ControllerPublishVolume cannot be encoded and is not sent, yet the
// rollback sends ControllerUnpublishVolume and NodeUnstageVolume for an attachment and a
// staging the claim never asked for, and the error blames "a path, secret, parameter or ID
// given as other bytes", none of which the user gave otherwise; the mount flag that was the
// cause goes unnamed. Correct: refused by Problem as invalid, naming the mount flag (by its
// place, never its value) or the fs_type, before admission, no RPC sent.
// Found by helper review82 (mountopts).
func TestClaimMountOptionsThatAreNotUTF8AreRefusedBeforeAnythingIsSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, says string
		mo         spec.MountOptions
	}{
		{"mount flag", "mount flag", spec.MountOptions{MountFlags: spec.MountFlags{"noatime", "password=hunt\xffer2"}}},
		{"fs_type", "fs_type", spec.MountOptions{FSType: "ext\xff4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			mo := tc.mo
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &mo})
			var sent []string
			for _, c := range h.mem.Calls() {
				switch c.RPC {
				case csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume,
					csi.RPCControllerUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCNodeUnpublishVolume:
					sent = append(sent, c.RPC)
				}
			}
			if err == nil {
				t.Fatalf("claim with a %s that is not UTF-8 succeeded; want refused as invalid, nothing sent", tc.name)
			}
			if !errors.Is(err, ErrInvalid) || len(sent) > 0 || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("claim with a %s that is not UTF-8: err %v\nplugin was sent %v\nwant refused as invalid naming the %s, no RPC sent (nothing was attached or staged to undo)", tc.name, err, sent, tc.says)
			}
			if strings.Contains(err.Error(), "hunt") {
				t.Errorf("the refusal quotes the mount flag: %v", err)
			}
		})
	}
}
