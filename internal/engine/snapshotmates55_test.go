package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestSnapshotDeleteRefusedWhileASocketMateRestoresFromIt: a restore through mem2, another
// plugin ID on mem's socket (one process, one storage), of a snapshot recorded through mem, cut
// short (CreateVolume unanswered), keeps the snapshot from a delete through mem as one through
// mem does (TestSnapshotDeleteRefusedWhileAVolumeIsBeingRestoredFromIt): before, the delete
// went on, and every CreateVolume reconcile sent again was answered NOT_FOUND for good.
func TestSnapshotDeleteRefusedWhileASocketMateRestoresFromIt(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.registerPlugin("mem2", h.socket)
	sv := volume("restored")
	sv.PluginID = "mem2"
	sv.SnapshotID = s.ID
	h.interruptedRestore(sv)
	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "restored" is being created from snapshot`) {
		t.Errorf("delete of the snapshot a socket mate's interrupted create restores from: %v; want a conflict naming the volume", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if v := h.volumeInfo("restored"); v.State != string(store.VolumeReady) {
		t.Errorf("volume restored after reconcile: %s; want ready", v.State)
	}
}

// TestRestoreThroughASocketMateOfASnapshotBeingDeletedIsRefused: the other order. A delete
// through mem recorded (unanswered) refuses a restore of the snapshot through mem2, its socket
// mate, as it refuses one through mem.
func TestRestoreThroughASocketMateOfASnapshotBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.registerPlugin("mem2", h.socket)
	h.unansweredSnapshotDelete(s.ID)
	h.faults.Clear()
	sv := volume("restored")
	sv.PluginID = "mem2"
	sv.SnapshotID = s.ID
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `of plugin "mem", the snapshot_id of volume "restored", is being deleted`) {
		t.Errorf("restore through a socket mate of a snapshot whose delete is recorded: %v; want a conflict naming the delete's plugin", err)
	}
	if n := len(h.mem.Volumes()); n != 1 {
		t.Errorf("plugin's volumes after the refused restore = %d, want 1 (the source's)", n)
	}
}

// TestSnapshotCreateUnderANameAnotherVolumesCreateHoldsIsRefused: a create of snapshot "n" of db
// whose CreateSnapshot the plugin carried out, its answers lost, leaves its intent for
// reconcile. A create of another volume under the same NAME took that intent for its own
// earlier attempt (looked up by plugin and name), overwrote its source, was answered
// ALREADY_EXISTS (n is db's) and forgot it: db's snapshot was left on the storage unrecorded,
// and the first create's "reconcile finishes it" untrue. It is refused, a conflict naming db,
// and reconcile records db's snapshot.
func TestSnapshotCreateUnderANameAnotherVolumesCreateHoldsIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.create(volume("other"))
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Code: codes.Unavailable})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "n", nil); err == nil {
		t.Fatal("a create whose answers were lost succeeded")
	}
	h.faults.Clear()
	_, err := h.e.CreateSnapshot(h.ctx, "other", "n", nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `snapshot name "n" of plugin "mem" is being created from volume "db"`) {
		t.Errorf("create of another volume under the name of db's create cut short: %v; want a conflict naming db", err)
	}
	if got := h.faults.Count(csi.RPCCreateSnapshot).Calls; got != 3 {
		t.Errorf("CreateSnapshot calls = %d, want db's 3 attempts and none for other's", got)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 1 || !list.Snapshots[0].Recorded || list.Snapshots[0].SourceVolumeID != "db" || list.Snapshots[0].Name != "n" {
		t.Errorf("snapshots after reconcile = %+v, want db's n recorded", list.Snapshots)
	}
}
