package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The state dir fills up right after each RPC of a claim answered OK: the error says the disk
// is full, and what to do, once. Before, a step whose own commit failed on the full disk had the
// claim's flush of what was done fail the same way, and the two were joined: the error told it
// twice, naming the database and the advice twice over, the second copy on a line of its own.
func TestDiskFullClaimSaysItOnce(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own
			h, after, free := diskFullHarness(t)
			defer free()
			h.create(volume("db"))
			*after = rpc
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
			wantDiskFull(t, "claim", err, h)
			if n := strings.Count(err.Error(), "free space there"); n != 1 {
				t.Errorf("claim on a full state dir says what to do %d times:\n%v", n, err)
			}
		})
	}
}

// The same for each RPC of a release.
func TestDiskFullReleaseSaysItOnce(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own
			h, after, free := diskFullHarness(t)
			defer free()
			h.create(volume("db"))
			h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
			*after = rpc
			_, err := h.e.Release(h.ctx, "db", "web-0")
			wantDiskFull(t, "release", err, h)
			if n := strings.Count(err.Error(), "free space there"); n != 1 {
				t.Errorf("release on a full state dir says what to do %d times:\n%v", n, err)
			}
		})
	}
}
