package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin whose CreateVolume answers with an ID of a megabyte (CSI bounds a string to 128
// bytes; volctl takes up to 4 KiB): before, the ID was recorded, shown whole by every listing
// and error, and sent back in every RPC on the volume. The create is refused, naming the
// size; the plugin's volume, which it made for this create, is deleted again by its whole ID;
// nothing is recorded; no message volctl writes holds the ID whole.
func TestCreateAnsweredWithAHugeIDIsRefusedAndTheVolumeDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	huge := strings.Repeat("v", 1<<20)
	h.mem.AddVolume(csi.Volume{ID: huge, CapacityBytes: 1 << 30})
	h.mem.AnswerCreateWith(huge)

	_, err := h.e.CreateVolume(h.ctx, volume("big"))
	if err == nil {
		t.Fatalf("a create answered with a volume ID of 1 MiB was recorded: %+v", h.volumeInfo("big"))
	}
	for _, want := range []string{"CreateVolume", "volume ID of 1048576 bytes", "128 bytes", "fix the plugin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("create error = %.300q; want it to say %q", err, want)
		}
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("create error is %d bytes long: it shows the ID whole", n)
	}
	if _, ok := h.mem.Volume(huge); ok {
		t.Error("the plugin's volume made for the refused create is still there: DeleteVolume was not sent with its ID")
	}
	if _, err := h.e.Volume(h.ctx, "big"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused create of big is still recorded: %v", err)
	}
	checkNoHugeMessage(t, h, huge)
}

// The same for CreateSnapshot: the plugin took the snapshot, and its answer is not used, as
// one without an ID: the snapshot's create stays recorded under its name, saying how to remove
// it, and the ID is recorded nowhere.
func TestSnapshotAnsweredWithAHugeIDIsNotUsed(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	huge := strings.Repeat("s", 1<<20)
	h.mem.AddSnapshot(csi.Snapshot{ID: huge, SourceVolumeID: h.volumeInfo("db").ExternalID, ReadyToUse: true})
	h.mem.AnswerSnapshotWith(huge)

	_, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err == nil {
		t.Fatal("a snapshot answered with an ID of 1 MiB was recorded")
	}
	for _, want := range []string{"CreateSnapshot", "snapshot ID of 1048576 bytes", "nightly"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("snapshot error = %.300q; want it to say %q", err, want)
		}
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("snapshot error is %d bytes long: it shows the ID whole", n)
	}
	snaps, err := h.e.ListSnapshots(h.ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps.Snapshots {
		if s.Recorded && s.ID == huge {
			t.Error("the snapshot's ID of 1 MiB is recorded")
		}
	}
	checkNoHugeMessage(t, h, huge)
}

// checkNoHugeMessage fails if an event volctl recorded holds id whole.
func checkNoHugeMessage(t *testing.T, h *harness, id string) {
	t.Helper()
	events, err := h.e.Events(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if strings.Contains(ev.Message, id) {
			t.Errorf("event %s holds the ID whole (%d bytes)", ev.Kind, len(ev.Message))
		}
	}
}
