package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestCloneReplayedAfterItsSourceGrewIsNotDeletedAsSmaller: a clone of volume "src" (1 MiB)
// is cut short, its CreateVolume's answer lost: the plugin made the clone, at 1 MiB, a faithful
// copy of src as it was. src was then expanded to 4 MiB (nothing refused an expand of a clone's
// source while the clone was in flight), and reconcile sent the clone's CreateVolume again,
// which the plugin, idempotent by name, answered with the clone it made: finishCreate sized the
// answer by the source's record now (4 MiB), refused it as "smaller than the 4 MiB its source
// has", deleted it and forgot the volume: the point-in-time copy the user asked for destroyed,
// the plugin blamed. Now the expand of a clone's source is refused while the clone is in flight,
// as its delete is (refuseCloneInFlight), naming the reconcile that finishes the clone; followed,
// the clone is recorded, and the expand goes. Found by helper review79 (clone).
func TestCloneReplayedAfterItsSourceGrewIsNotDeletedAsSmaller(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("src"))
	made := cloneCutShort(t, h)
	_, err := h.e.ExpandVolume(h.ctx, "src", 4*mib, 0)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "copy" is being created as a clone of volume "src"`) ||
		!strings.Contains(err.Error(), "`volctl reconcile`") || !strings.Contains(err.Error(), `then expand volume "src"`) {
		t.Fatalf("expand of a source whose clone is in flight: %v; want a conflict naming the clone and the reconcile that finishes it", err)
	}
	if v := h.volumeInfo("src"); v.CapacityBytes != 1*mib {
		t.Errorf("src after the refused expand: %d bytes; want 1MiB, nothing sent", v.CapacityBytes)
	}
	// Followed: reconcile finishes the clone, then the expand goes.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile, as advised: %v (%+v)", err, rep.Problems)
	}
	if _, ok := h.mem.Volume(made); !ok {
		t.Errorf("reconcile deleted clone %q", made)
	}
	if v, err := h.e.Volume(h.ctx, "copy"); err != nil || v.ExternalID != made || v.State != "ready" {
		t.Errorf("after reconcile, volume copy: %+v, %v; want it ready, recorded as clone %q", v, err, made)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "src", 4*mib, 0); err != nil {
		t.Errorf("expand of src once its clone is finished: %v", err)
	}
}

// TestCloneIDNamingOneVolumeAndAnothersStorageIsNotSilentlyResolved: clone_id is, in Nomad's
// spec format that volctl reads, the external (storage) ID of the volume to clone; volctl also
// takes a volctl volume ID there (cloneSource). When the word is both, volume "vol-1"'s volctl ID
// and volume "a"'s storage ID, cloneSource silently takes the volctl volume and clones its
// storage ("vol-2"): a spec written for Nomad (or exported by volctl, which writes the source's
// external ID) gets a clone of another volume's data, and nothing says which was taken. volctl
// refuses the same ambiguity for a snapshot word that is one snapshot's ID and another's NAME
// (snapshotWordNamesTwo). Correct: a conflict naming both volumes (and how to say which is
// meant), nothing created. Found by helper review79 (clone).
func TestCloneIDNamingOneVolumeAndAnothersStorageIsNotSilentlyResolved(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	a := h.create(volume("a"))
	named := h.create(volume(a.ExternalID)) // a volctl volume whose ID is a's storage ID
	if named.ExternalID == a.ExternalID {
		t.Fatalf("both volumes on one storage %q", a.ExternalID)
	}
	sv := volume("copy")
	sv.CloneID = a.ExternalID
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Errorf("clone_id %q (volume %q's storage ID, and volume %q's volctl ID, storage %q): created, cloned from storage %q, nothing said; "+
			"want a conflict naming both", a.ExternalID, a.ID, named.ID, named.ExternalID, v.CloneID)
		return
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `write clone_id = "a" to clone volume "a"`) ||
		!strings.Contains(err.Error(), `clone_id = "`+named.ExternalID+`" to clone volume "`+named.ID+`"`) {
		t.Fatalf("clone_id naming two volumes: %v; want a conflict naming both, and how to say each", err)
	}
	// Followed, each way.
	sv.CloneID = "a"
	if v, err := h.e.CreateVolume(h.ctx, sv); err != nil || v.CloneID != a.ExternalID {
		t.Errorf("clone_id = \"a\", as advised: %+v, %v; want a clone of storage %q", v, err, a.ExternalID)
	}
	other := volume("copy2")
	other.CloneID = named.ExternalID
	if v, err := h.e.CreateVolume(h.ctx, other); err != nil || v.CloneID != named.ExternalID {
		t.Errorf("clone_id = %q, as advised: %+v, %v; want a clone of storage %q", named.ExternalID, v, err, named.ExternalID)
	}
}

// cloneCutShort creates volume "copy" as a clone of volume "src" with every CreateVolume answer
// lost, and returns the clone the plugin made, volctl keeping the create for reconcile.
func cloneCutShort(t *testing.T, h *harness) string {
	t.Helper()
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	sv := volume("copy")
	sv.CloneID = "src"
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatalf("clone create with every answer lost: no error")
	}
	for id := range h.mem.VolumeNames() {
		if vol, ok := h.mem.Volume(id); ok && vol.CloneID != "" {
			return id
		}
	}
	t.Fatalf("the plugin made no clone: %+v", h.mem.Volumes())
	return ""
}

// expansionPendingAfterKill leaves volume id's expand to 4MiB pending: volctl killed once its
// intent was written, nothing sent, and the next process opened.
func expansionPendingAfterKill(t *testing.T, h *harness, id string) {
	t.Helper()
	if !cutShortAt(h, "expand:intent", 1, func() { h.e.ExpandVolume(h.ctx, id, 4*mib, 0) }) {
		t.Fatalf("the expand of %s never reached expand:intent", id)
	}
	h.open(h.e.cfg)
	if v := h.volumeInfo(id); v.ExpansionPending != 4*mib {
		t.Fatalf("%s after the killed expand: pending %d; want 4MiB pending", id, v.ExpansionPending)
	}
}
