package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSnapshotDeleteByIDWhileItsCreateRecordsLeavesNoRecordOfAGoneSnapshot: a `volume snapshot
// create db nightly` in one volctl is paused once its CreateSnapshot has been answered and before
// it records the answer (failpoint rpc:CreateSnapshot); a `volume snapshot delete mem nightly
// --id` in another volctl takes the ID as one volctl records nothing of. Before, the delete held
// only the snapshot's lock, not the source volume's, so it did not wait: it deleted the snapshot
// on the plugin, took its own delete mark back and said "deleted"; the create then went on,
// looked for a recorded delete of its answer, found none (the delete was over), recorded the
// snapshot and said "created". The store recorded snapshot "nightly", which the plugin no longer
// had: a backup `snapshot list` showed and a restore from it was admitted for, NOT_FOUND. The
// delete of a snapshot volctl records nothing of holds the source volume's lock of every create
// pending through the plugin: it waits for the create to record its answer, then deletes the
// snapshot as recorded, record and all.
// Found by helper review77 (race).
func TestSnapshotDeleteByIDWhileItsCreateRecordsLeavesNoRecordOfAGoneSnapshot(t *testing.T) {
	t.Parallel()
	h := snapshotDB(t)
	other := h.otherProcess()
	p := pauseAtFailpoint(t, h.e, "rpc:CreateSnapshot")
	aDone := make(chan error, 1)
	go func() { _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); aDone <- err }()
	select {
	case <-p.reached:
	case err := <-aDone:
		t.Fatalf("the create returned before its CreateSnapshot was answered: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the create never reached rpc:CreateSnapshot")
	}
	if n := len(h.mem.Snapshots()); n != 1 {
		t.Fatalf("precondition: the plugin has %d snapshots once CreateSnapshot answered, want 1", n)
	}

	// The other volctl's delete by ID, while the create is paused: it waits for the create.
	bDone := h.deleteWaitingForAVolumesLock(other, "mem", "nightly", byIDOnly, "db")
	p.release()
	var aErr error
	select {
	case aErr = <-aDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the create never returned once let go")
	}
	var b snapshotDeleteDone
	select {
	case b = <-bDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the delete never returned once the create was done")
	}
	if aErr != nil || b.err != nil {
		t.Fatalf("the create: %v; the delete: %v; want both done", aErr, b.err)
	}
	if b.res.Absent || b.res.Unchecked {
		t.Errorf("the delete said %+v of a snapshot the create recorded before it; want it deleted as recorded", b.res)
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("the plugin still has %d snapshots after the delete said it deleted nightly", n)
	}
	h.snapshotsMatch("after the create and the delete by ID")
}

// snapshotDeleteDone is what a delete of a snapshot run aside answered.
type snapshotDeleteDone struct {
	res SnapshotDeleted
	err error
}

// deleteWaitingForAVolumesLock runs e's delete of snapshot id through pluginID, the word taken
// as how says, and returns once it waits for volume volumeID's lock (a create of a snapshot
// pending there, whose answer it may be); the delete's answer comes on done.
func (h *harness) deleteWaitingForAVolumesLock(e *Engine, pluginID, id string, how snapshotWord, volumeID string) (done chan snapshotDeleteDone) {
	h.t.Helper()
	waits := make(chan string, 16)
	ctx := WithProgress(h.ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on ") {
			select {
			case waits <- step:
			default:
			}
		}
	})
	done = make(chan snapshotDeleteDone, 1)
	go func() {
		res, err := e.deleteSnapshotNamed(ctx, pluginID, id, how, nil)
		done <- snapshotDeleteDone{res, err}
	}()
	select {
	case step := <-waits:
		if !strings.Contains(step, fmt.Sprintf("volume %q", volumeID)) {
			h.t.Errorf("the delete of %s waits for %q; want the lock of volume %s, whose snapshot create is pending", id, step, volumeID)
		}
	case d := <-done:
		h.t.Errorf("the delete of %s returned (%+v, %v) while a create that may be answered with that ID had not recorded its answer; want it to wait", id, d.res, d.err)
		done <- d
	case <-time.After(30 * time.Second):
		h.t.Fatalf("the delete of %s neither waited for a lock nor returned", id)
	}
	return done
}
