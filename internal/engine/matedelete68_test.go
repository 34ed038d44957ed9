package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// mem and mem2 are two plugin IDs on one socket (one process, one storage). Snapshot
// "nightly" of db is on the plugin, unrecorded (deregistered, the storage kept). A delete of it
// through mem2 ends UNAVAILABLE: its delete stays recorded (the plugin may have deleted it).
// A create of "nightly" through mem is answered with that very snapshot; since round 68 it
// finds the mate's recorded delete (snapshotDeletingThrough), waits for its lock, asks again,
// gets the snapshot again and records it as made. An answered CreateSnapshot proves the plugin
// has the ID now, and the create took back a recorded delete of it under its own plugin ID
// (Undelete(rec.PluginID, ...)), but not the mate's: mem2's mark stayed, and the snapshot the
// create said it made was "being deleted" to every restore from it, and a problem to every
// reconcile pass (which refuses to finish a delete of a mate's recorded snapshot). Found by
// helper review68 (a review of that round's own change).
func TestSnapshotCreateTakesBackAMatesRecordedDeleteOfItsAnswer(t *testing.T) {
	t.Parallel()
	h, s := unrecordedSnapshotOfMates(t)
	h.faults.FailNext(csi.RPCDeleteSnapshot, codes.Unavailable, 100)
	if err := h.e.DeleteSnapshot(h.ctx, "mem2", s.ID, nil); err == nil {
		t.Fatal("the delete through mem2 succeeded despite UNAVAILABLE")
	}
	h.faults.Clear(csi.RPCDeleteSnapshot)
	deleting := func(id string) bool {
		var d bool
		h.update(func(tx *store.Tx) (err error) {
			d, err = tx.Snapshots().Deleting(id, s.ID)
			return err
		})
		return d
	}
	if !deleting("mem2") {
		t.Fatal("setup: the delete through mem2 is not recorded")
	}
	if len(h.mem.Snapshots()) != 1 {
		t.Fatalf("setup: the plugin's snapshots: %d, want the one kept", len(h.mem.Snapshots()))
	}
	info, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatalf("create nightly through mem: %v", err)
	}
	if info.ID != s.ID || !h.recordedSnapshot(s.ID) {
		t.Fatalf("create answered %q (recorded: %v), want %q recorded", info.ID, h.recordedSnapshot(info.ID), s.ID)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	for _, p := range rep.Problems {
		t.Logf("reconcile problem: %s", p.Message)
	}
	if deleting("mem2") {
		t.Errorf("the create through mem recorded snapshot %q as made (the plugin answered it twice), and the delete of it through its socket mate mem2 "+
			"stays recorded: a restore from it is refused as being deleted, and reconcile reports %d problem(s)", s.ID, len(rep.Problems))
	}
}
