package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// getVolumeOnly is a controller that answers for one volume (GET_VOLUME, with
// LIST_VOLUMES_PUBLISHED_NODES, which fills in ControllerGetVolume's published_node_ids) but
// lists none (no LIST_VOLUMES), as some do whose backend has no cheap listing.
func getVolumeOnly(c *csitest.MemConfig) {
	c.Controller.ListVolumes = false
	c.Controller.GetVolume = true
}

// A plugin without LIST_VOLUMES, but with GET_VOLUME and LIST_VOLUMES_PUBLISHED_NODES, answers
// ControllerUnpublishVolume OK (or NOT_FOUND) and still reports the volume published to the
// node in ControllerGetVolume: round 15's check asked ListVolumes only, so the release recorded
// the volume detached (free to be handed to Nomad, or attached to another node) while the
// storage still had it attached here. It is kept as a plugin still listing it is, and once the
// plugin detaches, reconcile finishes the release.
func TestControllerUnpublishAnsweredWhileGetVolumeStillReportsItPublished(t *testing.T) {
	t.Parallel()
	unpublishStillPublishedKept(t, getVolumeOnly, "(ControllerGetVolume's published_node_ids)")
}

// The same plugin answers DeleteVolume OK (or NOT_FOUND) and ControllerGetVolume still answers
// the volume: the storage, someone's data, is still there. Round 15's check asked ListVolumes
// only, and the volume was forgotten while the plugin kept it. It stays deleting; once the
// plugin deletes (ControllerGetVolume answers NOT_FOUND), the delete again forgets it.
func TestDeleteAnsweredWhileGetVolumeStillAnswersItKeepsTheVolumeDeleting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer string
		lie    func(h *harness)
		honest func(h *harness)
	}{
		{name: "OK", answer: "answered DeleteVolume OK but still has volume",
			lie:    func(h *harness) { h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = true }) },
			honest: func(h *harness) { h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = false }) }},
		{name: "NOT_FOUND", answer: "answered DeleteVolume NOT_FOUND but still has volume",
			lie:    func(h *harness) { h.faults.FailAlways(csi.RPCDeleteVolume, codes.NotFound) },
			honest: func(h *harness) { h.faults.Clear() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, getVolumeOnly)
			ext := h.create(volume("v")).ExternalID
			tc.lie(h)
			err := h.e.DeleteVolume(h.ctx, "v")
			if err == nil || !strings.Contains(err.Error(), tc.answer) || !strings.Contains(err.Error(), "(ControllerGetVolume)") {
				t.Fatalf("delete through a plugin whose ControllerGetVolume still answers the volume: %v; want an error saying so", err)
			}
			if v, verr := h.e.Volume(h.ctx, "v"); verr != nil || v.State != string(store.VolumeDeleting) || v.ExternalID != ext {
				t.Fatalf("volume v after the delete: %+v, %v; want it kept, deleting %q (the plugin still has it)", v, verr, ext)
			}
			tc.honest(h)
			if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
				t.Fatalf("delete once the plugin deletes: %v", err)
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("the plugin still has %q", ext)
			}
			if n := h.faults.Calls(csi.RPCControllerGetVolume); n == 0 {
				t.Errorf("ControllerGetVolume never sent")
			}
		})
	}
}

// Through a plugin that answers ControllerGetVolume and lists nothing, the detach's check is
// asked only with LIST_VOLUMES_PUBLISHED_NODES (the spec fills published_node_ids in only
// then), and a ControllerGetVolume that fails leaves the plugin's OK as it is, with a warning:
// the release finishes, as through a listing that fails.
func TestControllerUnpublishCheckedByGetVolumeOnlyWhenItCanBe(t *testing.T) {
	// Serial: its sub-second Short timeout covers RPCs it does not test (the fingerprint's),
	// which tests running beside it on a loaded machine made it miss.
	unpublishCheckedWhenItCanBe(t, getVolumeOnly, csi.RPCControllerGetVolume, []unpublishCheckCase{
		{name: "no LIST_VOLUMES_PUBLISHED_NODES", mutate: func(c *csitest.MemConfig) { c.Controller.ListVolumesPublishedNodes = false }},
		{name: "no GET_VOLUME", mutate: func(c *csitest.MemConfig) { c.Controller.GetVolume = false }},
		{name: "ControllerGetVolume fails", fault: func(f *csitest.Faults) { f.FailAlways(csi.RPCControllerGetVolume, codes.Internal) }, sent: 1, warned: true},
		{name: "checked", sent: 1},
	})
}

// A plugin with GET_SNAPSHOT but no LIST_SNAPSHOTS answers DeleteSnapshot OK (or NOT_FOUND)
// and GetSnapshot still answers the snapshot: it was not asked, and the record was forgotten
// while the plugin kept the snapshot, its data unaccounted for. The record stays, the error
// says so; once the plugin deletes (GetSnapshot answers NOT_FOUND), the delete again forgets it.
func TestDeleteSnapshotAnsweredWhileGetSnapshotStillAnswersItKeepsItsRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer string
		lie    func(h *harness)
		honest func(h *harness)
	}{
		{name: "OK", answer: "answered DeleteSnapshot OK but still has snapshot",
			lie:    func(h *harness) { h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = true }) },
			honest: func(h *harness) { h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = false }) }},
		{name: "NOT_FOUND", answer: "answered DeleteSnapshot NOT_FOUND but still has snapshot",
			lie:    func(h *harness) { h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.NotFound) },
			honest: func(h *harness) { h.faults.Clear() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, func(c *csitest.MemConfig) {
				c.Controller.ListSnapshots = false
				c.Controller.GetSnapshot = true
			})
			s := h.snapshot("keep")
			tc.lie(h)
			err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
			if err == nil || !strings.Contains(err.Error(), tc.answer) || !strings.Contains(err.Error(), "(GetSnapshot)") || !strings.Contains(err.Error(), "stays recorded") {
				t.Fatalf("delete of a snapshot GetSnapshot still answers: %v; want an error saying so, the record kept", err)
			}
			if !h.recordedSnapshot(s.ID) {
				t.Fatalf("snapshot %s forgotten while the plugin still has it", s.ID)
			}
			tc.honest(h)
			if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
				t.Fatalf("delete once the plugin deletes: %v", err)
			}
			if h.recordedSnapshot(s.ID) || len(h.mem.Snapshots()) != 0 {
				t.Errorf("after the delete: recorded %v, plugin holds %+v", h.recordedSnapshot(s.ID), h.mem.Snapshots())
			}
			if n := h.faults.Calls(csi.RPCListSnapshots); n != 0 {
				t.Errorf("ListSnapshots sent %d time(s) to a plugin without LIST_SNAPSHOTS", n)
			}
		})
	}
}
