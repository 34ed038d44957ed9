package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Two allocs' claims of one volume share its staging: the plugin stages a volume once per node
// (CSI: one staging path per volume; volctl's one staging row), its NodeStageVolume mounting
// the file system as the claim that staged it asked, and publishes every later claim from it,
// NodeStageVolume not sent again. A second claim asking for another fs_type was published from
// the first one's staging without a word: it asked for xfs and got the first claim's ext4 (a
// plugin that bind-mounts its staging does not act on NodePublishVolume's fs_type). It is
// refused, as a conflict naming the claim that holds the volume and both fs types, before
// anything is sent; the first claim is untouched, and a claim asking the same fs_type joins
// the staging as before. (Nomad, which stages per read-only flag and modes, hands a later
// claim the earlier one's staging as silently.)
func TestClaimWithAnotherFSTypeThanTheStagingIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}))
	first := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"uid=1000"}}})
	h.faults.ResetCounts()
	for _, fs := range []string{"xfs", ""} {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b", MountOptions: &spec.MountOptions{FSType: fs}})
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "a"`) || !strings.Contains(err.Error(), "fs_type ext4") {
			t.Fatalf("claim of v asking for fs_type %q while alloc \"a\"'s claim staged it as ext4 = %v\nwant a conflict naming alloc \"a\"'s claim and its fs_type ext4", fs, err)
		}
		if strings.Contains(err.Error(), "uid=1000") {
			t.Errorf("conflict %q shows mount flags, which may carry credentials", err)
		}
	}
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCControllerPublishVolume} {
		if n := h.faults.Calls(rpc); n != 0 {
			t.Errorf("%s sent %d times for the refused claims; want none", rpc, n)
		}
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "a" || live[0].TargetPath != first.TargetPath {
		t.Fatalf("claims after the refusals = %+v; want alloc \"a\"'s alone", live)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "c", MountOptions: &spec.MountOptions{FSType: "ext4"}})
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != 0 {
		t.Errorf("a claim asking the staging's own fs_type sent NodeStageVolume %d times; want it published from the staging", n)
	}
	h.release("v", "a")
	h.release("v", "c")
}

// Mount flags are each claim's: a claim with other mount flags than the one that staged the
// volume is published from the staging, its NodePublishVolume carrying its own flags, which a
// plugin applies to the target's mount (volctl's hostpath remounts with them) or refuses. A
// plugin that does not stage is not asked about fs_type either: it mounts at each target as
// the claim asks, and says so itself when it cannot.
func TestClaimsWithOtherMountFlagsShareTheStaging(t *testing.T) {
	t.Parallel()
	mmw := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	h := newHarness(t, nil)
	h.create(volume("v", mmw))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"nodev"}}})
	var flags [][]string
	for _, c := range h.mem.Calls() {
		if r, ok := c.Request.(csi.NodePublishVolumeRequest); ok && r.Capability.MountOptions != nil {
			flags = append(flags, r.Capability.MountOptions.MountFlags)
		}
	}
	if len(flags) != 2 || !slices.Equal(flags[1], []string{"nodev"}) {
		t.Errorf("NodePublishVolume mount flags = %q; want each claim's own, the second's [nodev]", flags)
	}

	ns := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
	ns.create(volume("v", mmw))
	ns.claim(ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "ext4"}})
	ns.claim(ClaimRequest{VolumeID: "v", Alloc: "b", MountOptions: &spec.MountOptions{FSType: "xfs"}})
}

// A job update: the old alloc's claim (ext4) is being released in another process (its
// NodeUnpublishVolume in flight) as the new alloc claims with xfs. The only claim in the way is
// going away, so the claim waits for the release, as checkAdmission does for an access mode
// (errHolderInFlight), and then stages the volume with its own fs_type. It was refused at once
// as a conflict naming the releasing claim's ext4.
func TestClaimWithAnotherFSTypeWaitsForTheReleaseInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "old", MountOptions: &spec.MountOptions{FSType: "ext4"}})
	relErr, err, _ := h.claimBeside(h.otherProcess(), csi.RPCNodeUnpublishVolume, h.releaseOf("v", "old"),
		ClaimRequest{VolumeID: "v", Alloc: "new", MountOptions: &spec.MountOptions{FSType: "xfs"}})
	if relErr != nil || err != nil {
		t.Fatalf("release of the old alloc's ext4 claim: %v; the new alloc's xfs claim beside it: %v; want it to wait for the release and claim", relErr, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "new" || live[0].FSType != "xfs" || !live[0].AtRest() {
		t.Errorf("live claims = %+v, want the new alloc's xfs claim alone, published", live)
	}
}
