package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestFSTypeConflictAdviceToClaimWithThePluginsDefaultCanBeFollowed: a volume registered with
// no fs_type is claimed (the claim staged with the plugin's default), then registered again
// with mount_options { fs_type = "xfs" } while that claim holds it, which the registration
// takes. The next claim, merged with the volume's xfs, is refused by sameMountAsLive, whose
// advice is to "claim it with the plugin's default fs_type". There is no such claim: an empty
// --fs-type (or a group's mount_options without one) is "not given", and Merge then takes the
// volume's xfs again, so following the advice gets the same refusal, for as long as the first
// claim is held. The advice is one that can be followed (register the volume again without
// fs_type, or release the claim), and the test follows it. Found by helper review75.
func TestFSTypeConflictAdviceToClaimWithThePluginsDefaultCanBeFollowed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1")
	sv.Capabilities = []spec.Capability{capab(spec.MultiNodeMultiWriter)}
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("register: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	sv.MountOptions = &spec.MountOptions{FSType: "xfs"}
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("register again with fs_type xfs while alloc \"a\" holds v: %v", err)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of v (now fs_type xfs) beside alloc \"a\"'s (the plugin's default) = %v; want a conflict", err)
	}
	const advice = "register it again with no fs_type in its spec's mount_options"
	if !strings.Contains(err.Error(), advice) {
		t.Fatalf("claim of v refused without advice a claim can follow (%q): %v", advice, err)
	}
	// A claim giving no fs_type asks for the volume's: refused the same while v says xfs.
	if _, ferr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b", MountOptions: &spec.MountOptions{}}); !errors.Is(ferr, ErrConflict) {
		t.Fatalf("claim giving no fs_type beside alloc \"a\"'s, v registered with xfs: %v; want the same conflict", ferr)
	}
	// Followed: registered again with no fs_type, the claim gets the staging's file system.
	sv.MountOptions = nil
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("the advised registration again with no fs_type: %v", err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}); err != nil {
		t.Fatalf("the claim after the advised registration: %v", err)
	}
	h.release("v", "b")
	h.release("v", "a")
}
