package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// `volume snapshot delete` of the snapshot a volume's interrupted create restores from: the
// create is recorded (its CreateVolume went unanswered: the plugin was unavailable), and only
// a CreateVolume sent again, by reconcile or the same create, finishes it, which needs the
// snapshot. Before, the delete went through, and every CreateVolume after it was answered
// NOT_FOUND: a final answer to a call sent again keeps the intent (an earlier one may have made
// the volume), so reconcile reported the create every pass for good. The delete is refused,
// naming the volume and the way on; once the create is finished, the snapshot deletes.
func TestSnapshotDeleteRefusedWhileAVolumeIsBeingRestoredFromIt(t *testing.T) {
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	sv := volume("restored")
	sv.SnapshotID = s.ID
	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("the create with its plugin unavailable succeeded")
	}
	h.faults.Clear()
	if v := h.volumeInfo("restored"); v.State != string(store.VolumeCreating) {
		t.Fatalf("volume restored after the interrupted create: %s; want creating", v.State)
	}

	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("deleting the snapshot volume restored's interrupted create restores from: %v; want a conflict", err)
	}
	for _, want := range []string{`volume "restored"`, s.ID, "volctl reconcile"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile finishing the create: %v %+v", err, rep)
	}
	if v := h.volumeInfo("restored"); v.State != string(store.VolumeReady) {
		t.Errorf("volume restored after reconcile: %s; want ready", v.State)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Errorf("deleting the snapshot once the restore is finished: %v", err)
	}
}
