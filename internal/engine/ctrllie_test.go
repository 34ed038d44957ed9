package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin that answers CreateVolume with another volctl volume's storage, too small for the
// new volume: the answer is refused, and the cleanup that deletes a volume made too small does
// not delete it, since it is the other volume's.
func TestCreateTooSmallAnsweredWithAnotherVolumesStorageDeletesNothing(t *testing.T) {
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
