package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin that answers CreateVolume with another volctl volume's storage, too small for the
// new volume: the answer is refused, and the cleanup that deletes a volume made too small does
// not delete it, since it is the other volume's.
func TestCreateTooSmallAnsweredWithAnotherVolumesStorageDeletesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	a := h.create(volume("a")) // 1 MiB
	h.mem.AnswerCreateWith(a.ExternalID)

	sv := volume("b")
	sv.CapacityMin = 1 << 30
	_, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatal("create of b answered with a's 1 MiB storage succeeded")
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s): the storage is a's", n)
	}
	if _, ok := h.mem.Volume(a.ExternalID); !ok {
		t.Fatalf("a's storage %q was deleted by b's failed create", a.ExternalID)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `already volume "a"`) {
		t.Errorf("create of b: %v, want a conflict naming volume a", err)
	}
	if _, err := h.e.Volume(h.ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("b's create intent is still recorded: %v", err)
	}
}

// A plugin that answers CreateSnapshot under a second name with the snapshot it made under the
// first, of the same volume: the first snapshot's record stays, and the second is refused.
func TestCreateSnapshotRefusesTheSameSnapshotUnderAnotherName(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	one := h.snapshot("one")
	h.mem.AnswerSnapshotWith(one.ID)
	_, err := h.e.CreateSnapshot(h.ctx, "db", "two", nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"one"`) {
		t.Errorf("snapshot two answered with snapshot one: %v, want a conflict naming \"one\"", err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range list.Snapshots {
		if sn.ID == one.ID && sn.Name != "one" {
			t.Errorf("snapshot %q is now recorded under name %q", one.ID, sn.Name)
		}
	}
}

// A plugin asked to restore a snapshot that answers with a volume pre-populated from another
// source: the volume is refused, since its data is not what was asked for.
func TestCreateRefusesAVolumeFromAnotherSource(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("want")
	h.mem.AddVolume(csi.Volume{ID: "old", CapacityBytes: 1 << 30, SnapshotID: "other-snap"})
	h.mem.AnswerCreateWith("old")

	sv := volume("restored")
	sv.SnapshotID = s.ID
	_, err := h.e.CreateVolume(h.ctx, sv)
	h.refusedCreate(err, "restored", "old", "other-snap", `snapshot "`+s.ID+`"`)
}

// A plugin asked for an empty volume that answers with one pre-populated from a snapshot: it is
// refused too (someone's data, not an empty volume).
func TestCreateRefusesAPrepopulatedVolumeForAnEmptyOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "old", CapacityBytes: 1 << 30, SnapshotID: "someones-snap"})
	h.mem.AnswerCreateWith("old")
	_, err := h.e.CreateVolume(h.ctx, volume("fresh"))
	h.refusedCreate(err, "fresh", "old", "someones-snap", "an empty volume was asked")
}

// refusedCreate checks that the create of volume id failed with an error naming each of want,
// recorded nothing, and left the plugin's volume ext, which it did not make, in place.
func (h *harness) refusedCreate(err error, id, ext string, want ...string) {
	h.t.Helper()
	if err == nil {
		h.t.Fatalf("create of %q answered with the plugin's volume %q succeeded: %+v", id, ext, h.volumeInfo(id))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			h.t.Errorf("create of %q: %v; want it to say %s", id, err, w)
		}
	}
	if _, ok := h.mem.Volume(ext); !ok {
		h.t.Errorf("the plugin's volume %q, which the create of %q did not make, was deleted", ext, id)
	}
	if _, err := h.e.Volume(h.ctx, id); !errors.Is(err, ErrNotFound) {
		h.t.Errorf("the refused create of %q is still recorded: %v", id, err)
	}
}

// A plugin that answers ControllerExpandVolume OK with less than the size asked: the expand
// fails, saying so, and the record does not claim the size was reached.
func TestExpandAnsweredWithLessThanAsked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a")) // 1 MiB
	h.mem.AnswerExpandWith(1 << 21)

	_, err := h.e.ExpandVolume(h.ctx, "a", 1<<30, 0)
	if err == nil || !strings.Contains(err.Error(), "2MiB") {
		t.Errorf("expand answered with 2 MiB of the 1 GiB asked: %v, want an error naming 2 MiB", err)
	}
	v := h.volumeInfo("a")
	if v.RequestedMin >= 1<<30 {
		t.Errorf("capacity_min recorded as %d after the plugin reached only %d", v.RequestedMin, v.CapacityBytes)
	}
	// The same spec again asks again.
	h.mem.AnswerExpandWith(0)
	sv := volume("a")
	sv.CapacityMin = 1 << 30
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	if v := h.volumeInfo("a"); v.CapacityBytes != 1<<30 {
		t.Errorf("after the same create again, capacity is %d, want %d", v.CapacityBytes, 1<<30)
	}
}

// A plugin that answers ControllerExpandVolume with less than the volume had: the record never
// shrinks.
func TestExpandAnsweredWithLessThanBefore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("a")
	sv.CapacityMin = 1 << 30
	h.create(sv)
	h.mem.AnswerExpandWith(1 << 20)

	_, err := h.e.ExpandVolume(h.ctx, "a", 2<<30, 0)
	if err == nil {
		t.Errorf("expand answered with 1 MiB for a 1 GiB volume succeeded")
	}
	if v := h.volumeInfo("a"); v.CapacityBytes < 1<<30 {
		t.Errorf("capacity recorded as %d, below the %d it was", v.CapacityBytes, 1<<30)
	}
}

// A plugin asked to clone a volume volctl does not record (clone_id names the provider's ID)
// that answers with the source volume itself: the clone is refused, and the source, which
// deleting the clone would delete, is neither recorded as the clone nor deleted.
func TestCloneAnsweredWithItsSourceIsRefused(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"provider-src", "PROVIDER-SRC"} {
		for _, tooSmall := range []bool{false, true} {
			// The source's ID spelled otherwise (another case), to a plugin that finds volumes
			// by IDs so spelled, of a source volctl does not record (clone_id naming the
			// provider's volume): before, only the ID exactly as sent was taken for the
			// source, and the cleanup of an answer too small, or `volume delete` of the
			// clone recorded under it, deleted the source.
			near := answer != "provider-src"
			h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = near })
			h.mem.AddVolume(csi.Volume{ID: "provider-src", CapacityBytes: 1 << 30})
			h.mem.AnswerCreateWith(answer)
			sv := volume("clone")
			sv.CloneID = "provider-src"
			if tooSmall {
				sv.CapacityMin = 2 << 30
			}
			_, err := h.e.CreateVolume(h.ctx, sv)
			want := []string{`volume "provider-src" itself`}
			if near {
				want = []string{`volume "PROVIDER-SRC", "provider-src" spelled otherwise`}
			}
			h.refusedCreate(err, "clone", "provider-src", want...)
			if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
				t.Errorf("answered with %q: DeleteVolume sent %d time(s): that is the source", answer, n)
			}
		}
	}
}
