package engine

import (
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a plugin that lists a snapshot still being processed (ready_to_use false)
// twice, first ready and then as it is (a listing that disagrees with itself: two backends
// merged, offset paging over a list that changed). The restore's check took the first entry,
// said ready, and sent CreateVolume from a snapshot the plugin itself said, on the same
// listing, is not ready: a volume missing what the processing had not done. Any entry saying
// not ready counts, the safe answer, as for a volume listed published (listsPublished).
func TestRestoreCheckedByASnapshotListingThatDisagreesWithItself(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, nil)
	processing := csi.Snapshot{ID: "snap-uploading", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes}
	h.mem.AddSnapshot(processing)
	listEachSnapshotReadyThenAsItIs(h.faults)
	h.mem.ResetCalls()
	sv := volume("restored")
	sv.SnapshotID = processing.ID
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `snapshot "snap-uploading"`) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("restore from a snapshot listed both ready and not ready = %v; want a conflict naming it not ready", err)
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCCreateVolume) {
		t.Errorf("RPCs = %v, want no CreateVolume", got)
	}
}

// The adversary: a plugin whose NodePublishVolume mounts over the alloc's publish directory
// (publish/<alloc>, shared by the alloc's claims on every volume), makes the target inside
// that mount and mounts it too; its NodeUnpublishVolume unmounts the target alone. The
// release's checks looked at the target and the claim's own publish/<alloc>/<volume> (both
// gone, removed from inside the mount) and recorded the claim released, the volume unstaged
// and detached, with the mount over publish/<alloc> left: the alloc's other claims' targets
// hidden under it, their paths now the plugin's tmpfs. A mount at a directory volctl shares
// between claims, and mounts nothing at, is checked for too: the release fails naming it,
// and once it is unmounted reconcile finishes, the other claim untouched. Real mounts, as root.
func TestNodeUnpublishLeavingAMountOverTheAllocsPublishDirectory(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("w"))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	other := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"}).TargetPath
	allocDir := filepath.Dir(filepath.Dir(target))
	if filepath.Dir(filepath.Dir(other)) != allocDir {
		t.Fatalf("targets %s and %s: want both under one alloc directory", target, other)
	}
	releaseLeftOverAMount(t, h, "v", "a", allocDir, mountOverAndInside(t, allocDir, target))
	claimUntouched(t, h, "w")
}

// The same at the plugin's staging directory (staging/<plugin>, shared by the plugin's
// volumes): a plugin that mounted over it to stage a volume inside, and unstages that volume
// alone, leaves a mount hiding every other volume's staging. The unstage fails naming it; once
// it is unmounted, reconcile finishes, the other volume's claim untouched. Real mounts, as root.
func TestNodeUnstageLeavingAMountOverThePluginsStagingDirectory(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("w"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	stV, _ := h.staging("v")
	stW, _ := h.staging("w")
	pluginDir := filepath.Dir(stV.StagingPath)
	if filepath.Dir(stW.StagingPath) != pluginDir {
		t.Fatalf("staging paths %s and %s: want both under one plugin directory", stV.StagingPath, stW.StagingPath)
	}
	releaseLeftOverAMount(t, h, "v", "a", pluginDir, mountOverAndInside(t, pluginDir, stV.StagingPath))
	claimUntouched(t, h, "w")
}

// The adversary: a plugin that mounted over the claim's own publish directory
// (publish/<alloc>/<volume>) and made the target inside, then went away, and the user forces
// a detach. The forced detach unmounted the target inside that mount and stopped: the mount
// over the directory, and the claim's first target mount hidden under it (the volume's data,
// at volctl's own path), stayed, and the volume was detached and its claims dropped saying
// nothing of them. The claim's publish directory is volctl's own path, made for that claim
// alone: it is unmounted as the target is, and what is still mounted there after is warned of.
// Real mounts, as root.
func TestForcedDetachUnmountsAMountOverTheClaimsPublishDirectory(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	dir := filepath.Dir(target)
	mountOverAndInside(t, dir, target)
	if _, err := h.e.Detach(h.ctx, "v", true); err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	left, err := kernelMounts{}.MountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("after the forced detach, mounted at or below the claim's publish directory %s: %v; want nothing", dir, left)
	}
}

// answersAboutAnotherVolume makes the plugin's ControllerGetVolume answer about another volume
// than the one asked (its ID rename(asked)), published to the nodes nodes(those it answered)
// says.
func answersAboutAnotherVolume(h *harness, rename func(string) string, nodes func([]string) []string) {
	h.faults.Inject(csi.RPCControllerGetVolume, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ControllerGetVolumeResponse)
		resp.Volume.VolumeId = rename(resp.GetVolume().GetVolumeId())
		if resp.Status == nil {
			resp.Status = &csipb.ControllerGetVolumeResponse_VolumeStatus{}
		}
		resp.Status.PublishedNodeIds = nodes(resp.GetStatus().GetPublishedNodeIds())
	}})
}

// The adversary: a plugin that answers ControllerUnpublishVolume OK, keeps the attachment, and
// answers the check's ControllerGetVolume with another volume's entry, published nowhere. The
// detach's check took that for the asked volume's word that it is published nowhere, and the
// release finished as checked. An answer about another ID says nothing of the asked volume
// when it is the unsafe answer (not published): the check is said not made (a warning naming
// both IDs), as when it fails. The safe answer (published to the node) is believed whatever
// the ID (a plugin that normalises IDs answers so of the volume asked): the attachment stays.
func TestControllerUnpublishCheckedByGetVolumeAnsweringAnotherVolume(t *testing.T) {
	t.Parallel()
	t.Run("not published", func(t *testing.T) {
		h := newHarness(t, getVolumeOnly)
		var logs strings.Builder
		h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		ext := h.externalID("v")
		h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true })
		answersAboutAnotherVolume(h, func(string) string { return "other-volume" }, func([]string) []string { return nil })
		if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
			t.Fatalf("release: %v", err)
		}
		if !strings.Contains(logs.String(), "could not be checked") || !strings.Contains(logs.String(), "answered about volume") || !strings.Contains(logs.String(), ext) {
			t.Fatalf("release checked by a ControllerGetVolume answering about volume other-volume, not %s; logs:\n%s\nwant a warning that the check could not be made, naming both", ext, logs.String())
		}
	})
	t.Run("published", func(t *testing.T) {
		h := newHarness(t, getVolumeOnly)
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true })
		answersAboutAnotherVolume(h, strings.ToUpper, func(n []string) []string { return n })
		if _, err := h.e.Release(h.ctx, "v", "a"); err == nil || !strings.Contains(err.Error(), "still lists it published to node") {
			t.Fatalf("release checked by a ControllerGetVolume answering the volume (its ID normalised) published here: %v; want it kept attached", err)
		}
	})
}

// claimUntouched checks, after reconcile, that volume's one claim is published as before: a
// release that found a mount over a directory it shares with another claim left that claim alone.
func claimUntouched(t *testing.T, h *harness, volume string) {
	t.Helper()
	if live := h.liveClaims(volume); len(live) != 1 || live[0].Releasing || live[0].LastError != "" {
		t.Fatalf("claims of %s after reconcile = %+v, want its claim published as before", volume, live)
	}
}

// listEachSnapshotReadyThenAsItIs makes the plugin's ListSnapshots name each snapshot twice:
// first ready, then as it is (a listing that disagrees with itself).
func listEachSnapshotReadyThenAsItIs(faults *csitest.Faults) {
	faults.Inject(csi.RPCListSnapshots, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ListSnapshotsResponse)
		var twice []*csipb.ListSnapshotsResponse_Entry
		for _, en := range resp.GetEntries() {
			ready := proto.Clone(en).(*csipb.ListSnapshotsResponse_Entry)
			ready.Snapshot.ReadyToUse = true
			twice = append(twice, ready, en)
		}
		resp.Entries = twice
	}})
}
