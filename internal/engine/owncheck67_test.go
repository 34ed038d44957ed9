package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestSourceDeleteRefusedWhileACloneFromItsNearSpellingIsInFlight: the clone
// counterpart of TestSnapshotDeleteRefusedWhileARestoreFromItsNearSpellingIsInFlight. On a
// plugin that reads IDs regardless of case (FoldIDs), a clone whose clone_id is src's storage ID
// in another case is a clone of src. Cut short, its intent recorded, the delete of src went on
// (refuseCloneInFlight compared the IDs exactly); refused now as for the exact ID. Found by
// helper review67's own review.
func TestSourceDeleteRefusedWhileACloneFromItsNearSpellingIsInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	src := h.create(volume("src"))
	sv := volume("clone")
	sv.CloneID = strings.ToUpper(src.ExternalID)
	h.interrupted(csi.RPCCreateVolume, "clone", func() error { _, err := h.e.CreateVolume(h.ctx, sv); return err })
	if got := h.volumeInfo("clone").State; got != string(store.VolumeCreating) {
		t.Fatalf("clone after the interrupted create: %s; want creating", got)
	}
	calls := h.mem.CallCount(csi.RPCDeleteVolume)
	err := h.e.DeleteVolume(h.ctx, "src")
	if !errors.Is(err, ErrConflict) {
		t.Errorf("delete of src (storage %q) while volume \"clone\" is being cloned from %q: %v; want a conflict naming the clone", src.ExternalID, sv.CloneID, err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != calls {
		t.Errorf("DeleteVolume sent for src under the clone in flight from a near spelling of its storage ID")
	}
}

// TestCloneFromANearSpellingOfASourceBeingDeletedIsRefused: the other way round
// (cloneSource): src's delete is cut short (recorded deleting); a clone whose clone_id is src's
// storage ID in another case, on a plugin that reads IDs so, is a clone of the source being
// deleted, and was recorded and sent; refused now as the exact spelling is
// (TestCloneByStorageIDOfAVolumeBeingDeletedIsRefused). Found by helper review67's own review.
func TestCloneFromANearSpellingOfASourceBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	src := h.create(volume("src"))
	h.interrupted(csi.RPCDeleteVolume, "delete", func() error { return h.e.DeleteVolume(h.ctx, "src") })
	if got := h.volumeInfo("src").State; got != string(store.VolumeDeleting) {
		t.Fatalf("source after the interrupted delete: %s; want deleting", got)
	}
	sv := volume("clone")
	sv.CloneID = strings.ToUpper(src.ExternalID)
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) {
		t.Errorf("clone from %q while src (storage %q) is being deleted: %v; want a conflict naming src being deleted", sv.CloneID, src.ExternalID, err)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != calls {
		t.Errorf("CreateVolume sent for the clone of a source being deleted")
	}
}

// TestHalfRegistrationsAreNoNodeLimitChange: a monolith whose node reports
// max_volumes_per_node and a topology, registered again as its controller half alone, then as
// the monolith it is, on the same socket, the process never restarted. noteCapabilityChange
// skips the node half's capabilities the declaration leaves out or the record was taken
// without, but still compared its limits and topology: each registration recorded a
// plugin-capabilities event "came back; its max_volumes_per_node is now ..., was ...". Found by
// helper review67's own review.
func TestHalfRegistrationsAreNoNodeLimitChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.MaxVolumes = 5
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, ControllerSocket: h.socket}); err != nil {
		t.Fatalf("register mem again as its controller half: %v", err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		t.Fatalf("register mem again as the monolith: %v", err)
	}
	for _, ev := range h.eventsOf("plugin-capabilities", "", "") {
		t.Errorf("registrations of one plugin process as its controller half, then as the monolith, recorded: %q", ev)
	}
}

// TestClaimOnAStoppedPluginNotFingerprintedIsARefusalConflict: as
// TestClaimOnAStoppedPluginWithAFullAcceptQueueIsRefused, but the plugin's recorded fingerprint
// is not reusable (a plugin restarted since, a new boot: here its socket identity dropped), so
// the claim's connection must fingerprint it and meets the full accept queue there, not in the
// Probe. Such a claim is refused, a conflict naming the plugin and `volctl plugin status`
// (exit 4), as one whose Probe failed; it exited 1. Found by helper review67's own review.
func TestClaimOnAStoppedPluginNotFingerprintedIsARefusalConflict(t *testing.T) {
	h := volumeOfAStoppedPlugin(t)
	h.update(func(tx *store.Tx) error {
		p, err := tx.Plugins().Get("stopped")
		if err != nil {
			return err
		}
		p.Fingerprint.Sockets = nil
		return tx.Plugins().SetFingerprint("stopped", p.Fingerprint)
	})
	if err := claimRefusedThroughStopped(t, h); !errors.Is(err, ErrConflict) {
		t.Errorf("the refusal of a claim through a plugin that accepts no connection is no conflict (exit 4): %v", err)
	}
}
