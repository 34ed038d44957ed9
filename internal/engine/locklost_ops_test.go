package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A volume's lock file removed by hand while `volume create` holds it, its CreateVolume in
// flight: a `volume delete` from another volctl takes a new file at the path and drives the
// same volume beside it. Before, the create went on once answered, recorded the volume and
// said "created", while the delete, once the controller lock was free, deleted it: the user was
// told of a volume that was gone. The create checks its lock once CreateVolume answers, before
// recording anything, and stops, naming the lock file, and the delete alone finishes (it learns
// the volume by the create's name and deletes it).
func TestLockFileDeletedWhileCreateVolumeInFlightStopsTheCreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var created VolumeInfo
	ferr, serr, lockPath := h.lockLostBeside("db", csi.RPCCreateVolume,
		func() error { var err error; created, err = h.e.CreateVolume(h.ctx, volume("db")); return err },
		func(ctx context.Context, second *Engine) error { return second.DeleteVolume(ctx, "db") })
	wantLockLost(t, "the create", ferr, lockPath, "db")
	if ferr == nil {
		t.Logf("the create answered %+v", created.VolumeSummary)
	}
	if serr != nil {
		t.Errorf("the delete beside it: %v", serr)
	}
	if _, err := h.e.Volume(h.ctx, "db"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume db after the delete: %v; want it gone", err)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Errorf("the plugin holds %d volumes; want none (the create's deleted)", n)
	}
	if evs := h.eventsSaying("volume-create", `volume "db" created`); len(evs) > 1 {
		t.Errorf("volume-create events %q; want one at most, the delete's replay's", evs)
	}
}

// The same for `volume delete`: its DeleteVolume in flight, the lock file removed, a second
// delete from another volctl. Before, the first forgot the volume once answered and the second,
// on the new lock file, sent DeleteVolume again and failed, the volume "not found" under it.
// The first stops once DeleteVolume answers, before forgetting anything, and the second
// finishes the delete alone.
func TestLockFileDeletedWhileDeleteVolumeInFlightStopsTheDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	ferr, serr, lockPath := h.lockLostBeside("db", csi.RPCDeleteVolume,
		func() error { return h.e.DeleteVolume(h.ctx, "db") },
		func(ctx context.Context, second *Engine) error { return second.DeleteVolume(ctx, "db") })
	wantLockLost(t, "the first delete", ferr, lockPath, "db")
	if serr != nil {
		t.Errorf("the second delete, on the lock file at the path: %v", serr)
	}
	if _, err := h.e.Volume(h.ctx, "db"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume db after the deletes: %v; want it gone", err)
	}
	if evs := h.eventsSaying("volume-delete", `volume "db" deleted`); len(evs) != 1 {
		t.Errorf("volume-delete events %q; want one, the second delete's", evs)
	}
}

// The same for `volume expand`: ControllerExpandVolume in flight, the lock file removed, a
// larger expand from another volctl. Before, the first recorded its answer, from the volume as
// it read it before the second began, and said "expanded". It stops once answered, recording
// nothing, and the second's expansion is what the volume records.
func TestLockFileDeletedWhileExpandInFlightStopsTheExpand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	ferr, serr, lockPath := h.lockLostBeside("db", csi.RPCControllerExpandVolume,
		func() error { _, err := h.e.ExpandVolume(h.ctx, "db", 2<<20, 0); return err },
		func(ctx context.Context, second *Engine) error {
			_, err := second.ExpandVolume(ctx, "db", 3<<20, 0)
			return err
		})
	wantLockLost(t, "the first expand", ferr, lockPath, "db")
	if serr != nil {
		t.Errorf("the second expand, on the lock file at the path: %v", serr)
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 3<<20 || v.RequestedMin != 3<<20 {
		t.Errorf("volume db: capacity %d, capacity_min %d; want both 3 MiB, the second expand's", v.CapacityBytes, v.RequestedMin)
	}
	if evs := h.eventsSaying("volume-expand", "expanded to "+spec.FormatSize(2<<20)); len(evs) != 0 {
		t.Errorf("volume-expand events %q; want none of the first expand, stopped before recording", evs)
	}
}

// The same for `volume snapshot create`, which holds its source volume's lock: CreateSnapshot
// in flight, the lock file removed, `snapshot delete` of the snapshot by its name from another
// volctl, which finishes the intent under the source's lock and deletes what it answers.
// Before, the create recorded the snapshot and said "created" while the delete removed it.
func TestLockFileDeletedWhileSnapshotInFlightStopsTheSnapshot(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	ferr, serr, lockPath := h.lockLostBeside("db", csi.RPCCreateSnapshot,
		func() error { _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); return err },
		func(ctx context.Context, second *Engine) error {
			return second.DeleteSnapshot(ctx, "mem", "nightly", nil)
		})
	wantLockLost(t, "the snapshot create", ferr, lockPath, "db")
	if serr != nil {
		t.Errorf("the snapshot delete beside it: %v", serr)
	}
	var recs []store.Snapshot
	var intents []store.SnapshotCreate
	h.update(func(tx *store.Tx) error {
		var err error
		if recs, err = tx.Snapshots().List("mem"); err != nil {
			return err
		}
		intents, err = tx.Snapshots().ListCreates("mem")
		return err
	})
	if len(recs) != 0 || len(intents) != 0 {
		t.Errorf("snapshot records %+v, intents %+v; want none, the snapshot deleted", recs, intents)
	}
	if evs := h.eventsSaying("snapshot-create", "created"); len(evs) > 1 {
		t.Errorf("snapshot-create events %q; want one at most, the delete's replay's", evs)
	}
}

// lockLostBeside runs first, an operation holding volume vol's lock, with its first call of rpc
// held at a gate; then removes the volume's lock file, as by hand, and runs second on another
// engine (another volctl) until it waits for the plugin's controller lock, which first holds
// through rpc; then lets rpc answer, and waits for both. It returns their errors and the lock
// file's path.
func (h *harness) lockLostBeside(vol, rpc string, first func() error, second func(context.Context, *Engine) error) (ferr, serr error, lockPath string) {
	h.t.Helper()
	gate := make(chan struct{})
	h.faults.Inject(rpc, csitest.Fault{Gate: gate, Times: 1})
	firstDone := make(chan error, 1)
	go func() { firstDone <- first() }()
	for deadline := time.Now().Add(30 * time.Second); h.faults.Held() == 0; time.Sleep(2 * time.Millisecond) {
		select {
		case err := <-firstDone:
			close(gate)
			h.t.Fatalf("the first operation ended before %s was sent: %v", rpc, err)
		default:
		}
		if time.Now().After(deadline) {
			close(gate)
			h.t.Fatalf("%s was never sent", rpc)
		}
	}
	other, lockPath := h.removeLockThenOpenAnother(vol)
	waiting := make(chan struct{})
	closeOnce := func() {
		select {
		case <-waiting:
		default:
			close(waiting)
		}
	}
	ctx := WithProgress(h.ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on plugin ") {
			closeOnce()
		}
	})
	secondDone := make(chan error, 1)
	go func() { secondDone <- second(ctx, other) }()
	select {
	case <-waiting:
	case serr = <-secondDone:
		close(gate)
		return <-firstDone, serr, lockPath
	case <-time.After(30 * time.Second):
		close(gate)
		h.t.Fatal("the second operation never waited for the plugin's controller lock")
	}
	close(gate)
	return <-firstDone, <-secondDone, lockPath
}

// wantLockLost checks that what, an operation whose volume lock file was removed under it,
// stopped with errLockLost's error naming the file, the volume and the way on.
func wantLockLost(t *testing.T, what string, err error, lockPath, vol string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s, whose lock file was deleted under it, went on beside the other volctl", what)
		return
	}
	if !errors.Is(err, errLockLost) {
		t.Errorf("%s: %v; want it stopped for its lock file, removed", what, err)
	}
	for _, want := range []string{lockPath, "removed", `volume "` + vol + `"`, "volctl reconcile"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s's error = %q; want it to say %q", what, err, want)
		}
	}
}

// eventsSaying returns the messages of the events of kind that contain text.
func (h *harness) eventsSaying(kind, text string) []string {
	h.t.Helper()
	return h.eventsOf(kind, "", text)
}

// The same for `volume deregister --force` of a volume whose ControllerUnpublishVolume is owed:
// the lock file removed while it sends it, and reconcile, from another volctl, sending it too.
// Before, the deregister took the lost lock for a reason the attachment could not be undone,
// forgot it and the volume with it, beside the reconcile working on them. It stops, leaving the
// volume registered, for the deregister to be run again.
func TestLockFileDeletedWhileDeregisterUnpublishesStopsTheDeregister(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	var warnings []string
	ferr, _, lockPath := h.lockLostBeside("v", csi.RPCControllerUnpublishVolume,
		func() error { var err error; warnings, err = h.e.DeregisterVolume(h.ctx, "v", true); return err },
		func(ctx context.Context, second *Engine) error { _, err := second.Reconcile(ctx); return err })
	wantLockLost(t, "the deregister", ferr, lockPath, "v")
	if ferr == nil {
		t.Logf("the deregister's warnings: %q", warnings)
	}
	if _, err := h.e.Volume(h.ctx, "v"); err != nil {
		t.Errorf("volume v after the deregister stopped: %v; want it still registered", err)
	}
	if evs := h.eventsSaying("volume-deregister", "deregistered"); len(evs) != 0 {
		t.Errorf("volume-deregister events %q; want none", evs)
	}
}
