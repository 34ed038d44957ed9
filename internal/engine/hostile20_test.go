package engine

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
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
	t.Parallel()
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
	t.Parallel()
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

// renamedAfter makes the driver behind h's socket answer GetPluginInfo with another name from
// its n-th call on: the plugin replaced behind its held socket between two attempts of an RPC.
func renamedAfter(h *harness, n int) {
	var calls atomic.Int32
	h.faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Answer: func(m proto.Message) {
		if calls.Add(1) >= int32(n) {
			m.(*csipb.GetPluginInfoResponse).Name = "other.csi.example"
		}
	}})
}

// A CreateVolume the plugin carried out and whose answer was lost (UNAVAILABLE), then, when it
// is sent again, not sent: the plugin was replaced behind its socket meanwhile. That refusal
// says nothing of the first CreateVolume, which made a volume only the create's CSI name finds:
// the create stays recorded, as after a final error to a CreateVolume sent again, and reconcile
// finishes it once the registered driver is back. Before, the intent was forgotten as if no
// CreateVolume had been sent, and the plugin's volume leaked, recorded nowhere.
func TestCreateRefusedAfterALostAnswerKeepsTheIntent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: 1})
	renamedAfter(h, 2) // the first attempt's check passes, the second's finds another driver

	_, err := h.e.CreateVolume(h.ctx, volume("b"))
	if err == nil || !strings.Contains(err.Error(), `now served by "other.csi.example"`) {
		t.Fatalf("create through a plugin replaced after its lost answer: %v; want the second CreateVolume not sent", err)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 1 {
		t.Fatalf("CreateVolume reached the plugin %d times, want once", n)
	}
	info, verr := h.e.Volume(h.ctx, "b")
	if verr != nil || info.State != string(store.VolumeCreating) {
		t.Fatalf("volume b after the refusal: %+v, %v; want its create still recorded (the plugin made %d volume(s))", info, verr, len(h.mem.Volumes()))
	}
	if !strings.Contains(err.Error(), "stays recorded") {
		t.Errorf("the refusal does not say the create stays recorded: %v", err)
	}

	h.faults.Clear(csi.RPCGetPluginInfo)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the registered driver back: %v %+v", err, rep.Problems)
	}
	if info := h.volumeInfo("b"); info.State != string(store.VolumeReady) {
		t.Fatalf("volume b after reconcile: %+v; want ready", info)
	}
	if n := len(h.mem.Volumes()); n != 1 {
		t.Fatalf("the plugin holds %d volumes, want b's alone", n)
	}
}

// The same for CreateSnapshot.
func TestCreateSnapshotRefusedAfterALostAnswerKeepsTheIntent(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Times: 1})
	renamedAfter(h, 2)

	_, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
	if err == nil || !strings.Contains(err.Error(), `now served by "other.csi.example"`) {
		t.Fatalf("snapshot through a plugin replaced after its lost answer: %v; want the second CreateSnapshot not sent", err)
	}
	if n := h.mem.CallCount(csi.RPCCreateSnapshot); n != 1 {
		t.Fatalf("CreateSnapshot reached the plugin %d times, want once", n)
	}
	if !strings.Contains(err.Error(), "stays recorded") {
		t.Errorf("the refusal does not say the snapshot stays recorded: %v", err)
	}
	h.faults.Clear(csi.RPCGetPluginInfo)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the registered driver back: %v %+v", err, rep.Problems)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Name != "s1" || recs[0].Pending || len(h.mem.Snapshots()) != 1 {
		t.Fatalf("snapshots after reconcile: recorded %+v, the plugin's %+v; want s1, recorded once", recs, h.mem.Snapshots())
	}
}
