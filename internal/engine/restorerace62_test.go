package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// restoredFromTheSnapshot is volume "r"'s spec, restored from the one snapshot plugin mem lists.
func restoredFromTheSnapshot(h *harness) spec.Volume {
	sv := volume("r")
	snaps, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil || len(snaps.Snapshots) != 1 {
		h.t.Fatalf("snapshots: %+v, %v", snaps, err)
	}
	sv.SnapshotID = snaps.Snapshots[0].ID
	return sv
}

// A restore from snapshot "nightly" begun while another volctl's `snapshot delete` of it holds
// the plugin's controller lock (DeleteSnapshot answered, its check not yet done) is refused at
// once as a restore from a snapshot being deleted, naming the delete. Before, the restore's
// readiness check waited for that lock, found the snapshot gone and sent CreateVolume anyway,
// whose NOT_FOUND told the user to "check snapshot_id", right when the command began. Found by
// helper review62.
func TestRestoreBesideTheSnapshotsDeleteSaysSo(t *testing.T) {
	t.Parallel()
	h := snapshotDB(t)
	h.snapshot("nightly")
	sv := restoredFromTheSnapshot(h)
	out := h.pausedPair("check:DeleteSnapshot",
		func(ctx context.Context) error { return h.e.DeleteSnapshot(ctx, "mem", "nightly", nil) },
		func(ctx context.Context, other *Engine) error {
			_, err := other.CreateVolume(ctx, sv)
			return err
		})
	if out.aErr != nil {
		t.Fatalf("the snapshot delete: %v", out.aErr)
	}
	if msg := fmt.Sprint(out.bErr); !errors.Is(out.bErr, ErrConflict) || !strings.Contains(msg, "is being deleted") || strings.Contains(msg, "check snapshot_id") {
		t.Errorf("restore = %v\nwant a conflict saying snapshot \"nightly\" is being deleted, not to check snapshot_id", out.bErr)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 1 { // db's own
		t.Errorf("%d CreateVolume sent; want db's alone, none for the restore", n)
	}
}

// The same delete recorded after the restore looked for one, and finished while the restore
// waited (here: the restore paused past that look, the delete run whole meanwhile): the
// restore says the snapshot was deleted by another volctl while it waited, and sends nothing.
// Before, CreateVolume's NOT_FOUND said to check snapshot_id.
func TestRestoreThatWaitedForTheSnapshotsDeleteSaysSo(t *testing.T) {
	t.Parallel()
	restoreBesideAWholeDelete(t, "restore:checked", "waited")
}

// restoreBesideAWholeDelete pauses a restore from snapshot "nightly" at failpoint fp while
// another volctl deletes the snapshot whole, and checks the restore is refused as a conflict
// saying the snapshot "was deleted by another volctl while this restore <while>", sending no
// CreateVolume and recording no volume.
func restoreBesideAWholeDelete(t *testing.T, fp, while string) {
	t.Helper()
	h := snapshotDB(t)
	h.snapshot("nightly")
	sv := restoredFromTheSnapshot(h)
	out := h.pausedPair(fp,
		func(ctx context.Context) error {
			_, err := h.e.CreateVolume(ctx, sv)
			return err
		},
		func(ctx context.Context, other *Engine) error {
			return other.DeleteSnapshot(ctx, "mem", "nightly", nil)
		})
	if out.bErr != nil {
		t.Fatalf("the snapshot delete: %v", out.bErr)
	}
	if want := "was deleted by another volctl while this restore " + while; !errors.Is(out.aErr, ErrConflict) || !strings.Contains(fmt.Sprint(out.aErr), want) {
		t.Errorf("restore = %v\nwant a conflict saying snapshot \"nightly\" %s", out.aErr, want)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 1 {
		t.Errorf("%d CreateVolume sent; want db's alone, none for the restore", n)
	}
	if _, err := h.e.Volume(h.ctx, sv.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume %q after the refused restore: %v; want nothing recorded", sv.ID, err)
	}
}

// A clone of volume "src" while another volctl's delete of src is in flight (held at
// DeleteVolume) is refused saying the delete is in flight or was interrupted. Before, it said
// the delete "was interrupted, and `volctl reconcile` finishes it", while it ran and finished
// on its own a moment later; a snapshot being deleted, and a source being created, said "in
// flight, or was interrupted" already. Found by helper review62.
func TestCloneOfASourceWhoseDeleteIsInFlightDoesNotSayInterrupted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.sourceAndClone(false)
	other := h.otherProcess()
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	go func() { done <- h.e.DeleteVolume(h.ctx, "src") }()
	h.waitInFlight(gate, done)
	_, err := other.CreateVolume(h.ctx, sv)
	close(gate)
	if derr := <-done; derr != nil {
		t.Fatalf("the source's delete: %v", derr)
	}
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("clone of a source being deleted = %v, want a conflict", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "its delete is in flight, or was interrupted") {
		t.Errorf("clone = %v\nthe source's delete is in flight in another volctl (it finished without error), not interrupted", err)
	}
}

// TestRestoreBesideADeleteRunAfterItsCheckSaysSo: the same delete run whole after the restore's
// readiness check let the plugin's controller lock go and before its intent was recorded (here:
// the restore paused there): CreateVolume's NOT_FOUND told the user to check snapshot_id. The
// intent's transaction finds the snapshot no longer recorded and says it was deleted by another
// volctl, sending nothing. Found by helper review72 (a lead).
func TestRestoreBesideADeleteRunAfterItsCheckSaysSo(t *testing.T) {
	t.Parallel()
	restoreBesideAWholeDelete(t, "restore:ready", "checked it")
}
