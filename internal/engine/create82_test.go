package engine

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestDeleteOfAnInterruptedCreateAnsweredWithAnotherSourceIsNotSaidDeleted: a create whose
// CreateVolume answers were all lost (the plugin made the volume under the create's CSI name),
// then `volume delete` of it. The delete sends CreateVolume again under that name to learn the
// volume's ID, and the plugin answers OK with the volume it holds under the name, its
// content_source naming a snapshot where an empty volume was asked. csi.createdVolume refuses
// that answer, leaving the volume alone ("delete it with the storage provider's tools if nothing
// uses it"); finishCreateForDelete then takes the refusal for a plugin "refusing the create for
// good" that "holds nothing under the name", forgets the record and returns nil: the command
// says `Volume "v" deleted`, exit 0, while the plugin still holds the volume it answered the
// name with, which volctl now records nowhere and never deleted. Correct: an answer the plugin
// gave OK, with a volume, is not a refusal for good: the delete fails saying the volume was not
// deleted (naming the CSI name or the volume's ID, as the "unreadable" and "another volume's
// storage" answers are said), or deletes it; it never returns success with the storage left.
// Found by helper review82 (create).
func TestDeleteOfAnInterruptedCreateAnsweredWithAnotherSourceIsNotSaidDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("create with every answer lost succeeded: precondition not met")
	}
	made := h.mem.Volumes()
	if len(made) != 1 {
		t.Fatalf("the plugin holds %d volumes after the lost create; want the one it made: precondition not met", len(made))
	}
	name := h.volumeRow("v").CSIName
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: withContentSource(&csipb.VolumeContentSource{
		Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: "snap-other"}}})})

	h.faults.ResetCounts()
	err := h.e.DeleteVolume(h.ctx, "v")
	if h.faults.Calls(csi.RPCCreateVolume) == 0 {
		t.Fatalf("the delete sent no CreateVolume to learn what the lost create made: precondition not met (err %v)", err)
	}
	_, stillThere := h.mem.Volume(made[0].ID)
	if err == nil && stillThere {
		_, gerr := h.e.Volume(h.ctx, "v")
		t.Fatalf("delete of volume v answered nil (the CLI prints `Volume \"v\" deleted`, exit 0), record gone (%v), "+
			"while the plugin still holds volume %q, which it answered v's CSI name %q with: storage left on the plugin, recorded nowhere, said deleted; "+
			"want an error saying v was not deleted, naming that volume or the name", gerr, made[0].ID, name)
	}
	if err != nil && (!strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), made[0].ID)) {
		t.Errorf("delete error %v; want it to say the volume was not deleted, naming the volume %q the plugin answered with", err, made[0].ID)
	}
	if err != nil && errors.Is(err, ErrNotFound) {
		t.Errorf("delete error %v is a not-found", err)
	}
}
