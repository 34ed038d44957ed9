package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin replaced behind a held socket by another driver, which answers CreateVolume OK with
// a volume of its own, under an ID (the sequential IDs many drivers give) that the registered
// driver uses for a volume volctl does not record (another state dir's, Nomad's). Recorded as
// the new volume's storage, that ID is the registered driver's other volume once it is back:
// the new volume's delete, which asks the driver's name and finds the registered one, deletes
// that volume, and a claim would hand its data to the alloc. CreateVolume is not sent to
// another driver than the registered one: the create is refused, naming both, and nothing is
// recorded.
func TestCreateThroughAHeldSocketServedByAnotherDriverRecordsNothing(t *testing.T) {
	h, held, backend := heldHarness(t)
	h.create(volume("a"))
	h.mem.AddVolume(csi.Volume{ID: "theirs", CapacityBytes: 1 << 20}) // not volctl's
	other := driverBehind(t, held, "theirs")
	other.AnswerCreateWith("theirs")
	h.open(Config{}) // the next process, reusing the fingerprint: the socket file is the same

	_, err := h.e.CreateVolume(h.ctx, volume("b"))
	if n := other.CallCount(csi.RPCCreateVolume); n != 0 {
		t.Errorf("CreateVolume sent %d time(s) to driver other.csi.example", n)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `now served by "other.csi.example"`) {
		t.Errorf("create through the other driver: %v; want a conflict naming it", err)
	}
	if info, err := h.e.Volume(h.ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume b after the create through the other driver: %+v, %v; want nothing recorded", info, err)
	}

	held.Switch(backend)
	h.open(Config{})
	if err := h.e.DeleteVolume(h.ctx, "b"); err != nil && !errors.Is(err, ErrNotFound) {
		t.Errorf("delete of b with the registered driver back: %v", err)
	}
	if _, ok := h.mem.Volume("theirs"); !ok {
		t.Fatal(`the registered driver's volume "theirs", not volctl's, was deleted`)
	}
	if _, err := h.e.CreateVolume(h.ctx, volume("b")); err != nil {
		t.Fatalf("create of b with the registered driver back: %v", err)
	}
	if info := h.volumeInfo("b"); info.ExternalID == "theirs" {
		t.Fatalf("volume b recorded on the storage %q of another", info.ExternalID)
	}
}

// The same for CreateSnapshot: another driver behind the held socket, holding a volume of the
// ID volctl's volume has, answers with a snapshot of its own, whose ID the registered driver
// uses for another snapshot (not volctl's). Recorded, a restore from it would hand the new
// volume that snapshot's data, and its delete would delete it. CreateSnapshot is not sent to
// another driver.
func TestCreateSnapshotThroughAHeldSocketServedByAnotherDriverRecordsNothing(t *testing.T) {
	h, held, backend := heldHarness(t)
	ext := h.create(volume("db")).ExternalID
	h.mem.AddSnapshot(csi.Snapshot{ID: "snap-theirs", SourceVolumeID: "elsewhere", SizeBytes: 1 << 20, ReadyToUse: true})
	other := driverBehind(t, held, ext)
	other.AddSnapshot(csi.Snapshot{ID: "snap-theirs", SourceVolumeID: ext, SizeBytes: 1 << 20, ReadyToUse: true})
	other.AnswerSnapshotWith("snap-theirs")
	h.open(Config{})

	_, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
	if n := other.CallCount(csi.RPCCreateSnapshot); n != 0 {
		t.Errorf("CreateSnapshot sent %d time(s) to driver other.csi.example", n)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `now served by "other.csi.example"`) {
		t.Errorf("snapshot through the other driver: %v; want a conflict naming it", err)
	}
	held.Switch(backend)
	h.open(Config{})
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == "snap-theirs" {
			t.Errorf("snapshot %q, another driver's answer, is recorded as volume db's: %+v", r.ID, r)
			if err := h.e.DeleteSnapshot(h.ctx, "mem", r.ID, nil); err != nil {
				t.Logf("its delete: %v", err)
			}
		}
	}
	if len(h.mem.Snapshots()) != 1 {
		t.Fatal(`the registered driver's snapshot "snap-theirs", not volctl's, was deleted`)
	}
}
