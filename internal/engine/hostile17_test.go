package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// listsEachVolumeTwice makes the plugin's ListVolumes list every volume twice, two ways: first
// published nowhere, then as it is (published where it is). A plugin whose pages disagree with
// each other does this: offset paging over a list that changed between two pages, a listing
// merged from two backends, or a cache listed before the truth.
func listsEachVolumeTwice(h *harness) {
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ListVolumesResponse)
		var twice []*csipb.ListVolumesResponse_Entry
		for _, en := range resp.GetEntries() {
			nowhere := proto.Clone(en).(*csipb.ListVolumesResponse_Entry)
			nowhere.Status = &csipb.ListVolumesResponse_VolumeStatus{}
			twice = append(twice, nowhere, en)
		}
		resp.Entries = twice
	}})
}

// A plugin lists the volume twice, once published nowhere and once published to the node,
// after answering ControllerUnpublishVolume OK while it keeps the attachment. The detach's
// check stopped at the first entry and recorded the volume detached (free to be handed to
// Nomad, or attached to another node) while the plugin itself said, on the same listing, that
// it is attached here. A listing that disagrees with itself about the node counts as still
// published, the safe answer: the attachment stays recorded, the claim releasing.
func TestControllerUnpublishCheckedByAListingThatDisagreesWithItself(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	ext := h.externalID("v")
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true })
	listsEachVolumeTwice(h)
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), "still lists it published to node") {
		t.Fatalf("release through a plugin that lists the volume both detached and attached: %v; want an error saying it still lists it published", err)
	}
	if nodes := h.mem.PublishedNodes(ext); len(nodes) != 1 {
		t.Fatalf("plugin's attachments = %v, want the one it kept", nodes)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("staging after the release = %+v (found %v): want the attachment still recorded", st, ok)
	}
	// Once the plugin detaches, both entries agree and reconcile finishes the release.
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = false })
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile once the plugin detaches: %+v, %v", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v, want none", live)
	}
}

// The same listing before a claim's first ControllerPublishVolume (attachedAlready): the
// volume is attached to the node by another state dir, and the plugin lists it first as
// published nowhere. The check stopped there, and the claim took the other's attachment as its
// own (ControllerPublishVolume answers OK for it); its rollback, or its release, would detach
// the volume from under the other's mounts. It is refused, as when the listing agrees.
func TestClaimCheckedByAListingThatDisagreesWithItself(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	claimAttachedByAnotherStateDir(t, h, func() { listsEachVolumeTwice(h) })
}

// A snapshot the plugin says is not ready (ready_to_use false: cut, and still being processed,
// uploaded say) is not ready "to create new volumes", in the CSI spec's words; a plugin that
// restores from it anyway hands the user a volume missing what the processing had not done,
// and says nothing. volctl sent the CreateVolume without asking. The create asks the plugin
// first (ListSnapshots filtered by the ID, or GetSnapshot where it cannot list) and refuses,
// a conflict naming the snapshot and what to do, sending no CreateVolume and recording
// nothing; once the plugin says it is ready, the same create restores it.
func TestRestoreFromASnapshotThePluginSaysIsNotReadyIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*csitest.MemConfig)
		asked  string
	}{
		{name: "ListSnapshots", asked: csi.RPCListSnapshots},
		{name: "GetSnapshot", asked: csi.RPCGetSnapshot, mutate: func(c *csitest.MemConfig) {
			c.Controller.ListSnapshots = false
			c.Controller.GetSnapshot = true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, db := snapshotHarness(t, tc.mutate)
			processing := csi.Snapshot{ID: "snap-uploading", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes}
			h.mem.AddSnapshot(processing)
			h.mem.ResetCalls()
			sv := volume("restored")
			sv.SnapshotID = processing.ID
			_, err := h.e.CreateVolume(h.ctx, sv)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `snapshot "snap-uploading"`) || !strings.Contains(err.Error(), "not ready") ||
				!strings.Contains(err.Error(), "volctl volume snapshot list") {
				t.Fatalf("restore from a snapshot the plugin says is not ready = %v; want a conflict naming it, not ready, and how to see when it is", err)
			}
			if got := h.rpcs(); slices.Contains(got, csi.RPCCreateVolume) || !slices.Contains(got, tc.asked) {
				t.Errorf("RPCs = %v, want %s and no CreateVolume", got, tc.asked)
			}
			if _, err := h.e.Volume(h.ctx, "restored"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume after the refused restore: %v, want not recorded", err)
			}
			processing.ReadyToUse = true
			h.mem.AddSnapshot(processing)
			if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
				t.Fatalf("restore once the snapshot is ready: %v", err)
			}
		})
	}
}

// A plugin whose NodePublishVolume mounts over the target's parent, the claim's own publish
// directory (publish/<alloc>/<volume>, which volctl made), then makes the target inside that
// mount and mounts it too; its NodeUnpublishVolume unmounts the target alone. The release's
// check looked at the target (gone, its directory removed from inside the mount) and recorded
// the claim released, the staging then unstaged and the volume detached, with the mount over
// the publish directory left, and the claim's first target mount hidden under it: "nothing
// recorded released while a mount is left". The check covers the claim's publish directory:
// the release fails naming what is left, and once it is unmounted reconcile finishes it.
// Real mounts, as root.
func TestNodeUnpublishLeavingAMountOverTheClaimsPublishDirectory(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	dir := filepath.Dir(target)
	// What the plugin did besides the target it was asked for: a mount over dir, the target
	// made inside it and mounted there.
	releaseLeftOverAMount(t, h, "v", "a", dir, mountOverAndInside(t, dir, target))
}

// mountOverAndInside mounts a tmpfs over dir and another at inner inside it (made there), as
// a plugin does that mounts over a directory volctl made and makes the path it was given
// inside. It returns what unmounts them by hand, and the first mount at inner hidden under
// dir (the plugin's own, made before), also run at the test's end.
func mountOverAndInside(t *testing.T, dir, inner string) (unmountByHand func()) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount over %s: %v", dir, err)
	}
	unmountByHand = func() {
		_ = unix.Unmount(dir, unix.MNT_DETACH)   // the mount over dir and what is mounted in it
		_ = unix.Unmount(inner, unix.MNT_DETACH) // the first mount at inner, hidden under it
	}
	t.Cleanup(unmountByHand)
	if err := os.MkdirAll(inner, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount at %s inside it: %v", inner, err)
	}
	return unmountByHand
}

// releaseLeftOverAMount releases alloc's claim of vol through a plugin that left the mount
// over dir (mountOverAndInside): the release fails saying dir is still mounted, the claim kept
// releasing and the volume staged and attached; once unmountByHand has run, reconcile
// finishes the release.
func releaseLeftOverAMount(t *testing.T, h *harness, vol, alloc, dir string, unmountByHand func()) {
	t.Helper()
	// The mounts stand for what the plugin's NodePublishVolume made, mounted after it here:
	// what the target shows now is what that publish left, as the claim records it once
	// accepted (store.Claim.TargetMount), not a cover since.
	for _, cl := range h.liveClaims(vol) {
		if cl.Alloc == alloc {
			shows := h.e.targetShows(&cl)
			if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error { return tx.Claims().SetTargetMount(cl.ID, shows) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := h.e.Release(h.ctx, vol, alloc)
	if err == nil || !strings.Contains(err.Error(), "still mounted") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("release with a mount left over %s = %v\nwant an error saying it is still mounted", dir, err)
	}
	if live := h.liveClaims(vol); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims after the release = %+v: want the claim kept releasing for reconcile", live)
	}
	if st, ok := h.staging(vol); !ok || !st.Staged || !st.ControllerPublished {
		t.Fatalf("staging after the release = %+v (found %v): want it still staged and attached", st, ok)
	}

	unmountByHand()
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile once the mounts are gone: %+v, %v", rep, err)
	}
	if live := h.liveClaims(vol); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v, want none", live)
	}
}
