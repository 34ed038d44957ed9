package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestCloneOfAHandedOverSourceWithAnExpansionPendingAdvisesAWayThatWorks: volume "src" has an
// expansion to 4MiB pending (ControllerExpandVolume sent, its answer lost: the plugin
// unavailable) and is then handed over to Nomad with --force. A create of volume "copy" with
// clone_id = src's storage ID (the path d247362f added to notCloningPendingExpansion), or its
// volctl ID, is refused "run `volctl reconcile` to finish it, then create volume "copy" again".
// Followed, it cannot work: reconcilePendingExpansions leaves a handed-over volume's expansion
// for the take-back (handedOver), reports nothing about it, and the create again is refused
// with the same words, for as long as the volume is Nomad's. The refusal's way out is one
// volctl itself will not take. Correct: notCloningPendingExpansion, as it does for a plugin
// without EXPAND_VOLUME, says what finishes the expansion of a handed-over source: taking it
// back (`volctl nomad release src`), then `volctl reconcile`, then the create again; or the
// advice it gives works when followed.
// Found by helper review79 (ownd), in this round's own change.
func TestCloneOfAHandedOverSourceWithAnExpansionPendingAdvisesAWayThatWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	src := h.create(volume("src"))
	h.interrupted(csi.RPCControllerExpandVolume, "expand", func() error {
		_, err := h.e.ExpandVolume(h.ctx, "src", 4<<20, 0)
		return err
	})
	if _, err := h.e.HandOver(h.ctx, "src", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over of src: %v", err)
	}
	for _, cloneID := range []string{src.ExternalID, "src"} {
		sv := volume("copy")
		sv.CloneID = cloneID
		_, err := h.e.CreateVolume(h.ctx, sv)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("clone_id %q of src, its expansion pending, handed over: %v; want a conflict", cloneID, err)
		}
		if !strings.Contains(err.Error(), "is handed over to Nomad at") || !strings.Contains(err.Error(), "volctl nomad release src") ||
			!strings.Contains(err.Error(), "then run `volctl reconcile`") {
			t.Errorf("clone_id %q of src, its expansion pending, handed over: %v; want the refusal to name the take-back the expansion waits for", cloneID, err)
		}
	}
	// Followed: taken back, reconcile finishes the expansion, the clone (of the 4MiB source) goes.
	if _, err := h.e.TakeBack(h.ctx, "src", func(HandoverInfo) (string, error) { return "deregistered from Nomad", nil }, nil); err != nil {
		t.Fatalf("take back, as advised: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile, as advised: %v (%+v)", err, rep.Problems)
	}
	sv := volume("copy")
	sv.CloneID, sv.CapacityMin = "src", 4<<20
	if v, err := h.e.CreateVolume(h.ctx, sv); err != nil || v.CloneID != src.ExternalID {
		t.Errorf("the clone once src is taken back and its expansion finished: %+v, %v", v, err)
	}
}
