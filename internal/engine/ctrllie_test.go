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
