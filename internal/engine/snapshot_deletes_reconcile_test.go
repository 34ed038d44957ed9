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

// A snapshot delete whose answer never came (UNAVAILABLE at every try: the plugin may have
// deleted it) stays recorded, and reconcile finishes it as it finishes an interrupted volume
// delete: DeleteSnapshot sent again, the snapshot gone from the plugin, its record and the
// recorded delete forgotten, a restore from it the plugin's NOT_FOUND rather than a refusal
// naming a delete nobody runs. Before, reconcile left the recorded delete, and every restore
// from the snapshot was refused until the user ran the delete again.
func TestReconcileFinishesARecordedSnapshotDelete(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.unansweredSnapshotDelete(s.ID)
	h.faults.Clear()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile: %v, problems %+v", err, rep.Problems)
	}
	if got := h.mem.Snapshots(); len(got) != 0 {
		t.Errorf("after reconcile the plugin still has %+v", got)
	}
	var deleting, recorded bool
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		var err error
		if deleting, err = tx.Snapshots().Deleting("mem", s.ID); err != nil {
			return err
		}
		_, err = tx.Snapshots().Get("mem", s.ID)
		recorded = err == nil
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if deleting || recorded {
		t.Errorf("after reconcile snapshot %s: delete recorded %v, snapshot recorded %v; want neither", s.ID, deleting, recorded)
	}
	found := false
	for _, a := range rep.Actions {
		found = found || (a.Kind == "deleted" && strings.Contains(a.Message, s.ID))
	}
	if !found {
		t.Errorf("reconcile's actions %+v do not say snapshot %s was deleted", rep.Actions, s.ID)
	}
	sv := volume("restored")
	sv.SnapshotID = s.ID
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil || errors.Is(err, ErrConflict) {
		t.Fatalf("restore from the deleted snapshot: %v; want the plugin's NOT_FOUND, not a refusal of a delete recorded", err)
	}
	h.reconcileClean(1)
}

// unansweredSnapshotDelete deletes snapshot id of plugin "mem" while the plugin answers every
// DeleteSnapshot UNAVAILABLE (the fault stays): the delete fails saying it stays recorded.
func (h *harness) unansweredSnapshotDelete(id string) {
	h.t.Helper()
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.Unavailable)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err == nil || !strings.Contains(err.Error(), "the delete stays recorded") {
		h.t.Fatalf("a delete of snapshot %s unanswered: %v; want it to say the delete stays recorded", id, err)
	}
}

// deletingRecorded reports whether the delete of snapshot id of plugin "mem" is recorded.
func (h *harness) deletingRecorded(id string) bool {
	h.t.Helper()
	var deleting bool
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		var err error
		deleting, err = tx.Snapshots().Deleting("mem", id)
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	return deleting
}

// A snapshot delete unanswered (the plugin may have deleted it), then the delete again and a
// reconcile while the plugin cannot be reached: neither sends DeleteSnapshot, so neither learns
// the snapshot is there, and the recorded delete stays, restores from it refused, until one
// reaches the plugin and finishes it. Before, the delete again forgot it on its way out, as
// if nothing had been sent, and a restore from a snapshot that may be gone went ahead.
func TestSnapshotDeleteAgainThatSendsNothingKeepsTheRecordedDelete(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.unansweredSnapshotDelete(s.ID)
	h.faults.Clear()
	h.stopServe()
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err == nil {
		t.Fatal("a delete through a plugin that is not there succeeded")
	}
	if !h.deletingRecorded(s.ID) {
		t.Fatal("the delete again, which reached no plugin, forgot the delete recorded by the one unanswered before it")
	}
	if rep, err := h.e.Reconcile(h.ctx); err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, s.ID) ||
		!strings.Contains(rep.Problems[0].Message, "volctl volume snapshot deregister mem "+s.ID) {
		t.Fatalf("reconcile with the plugin gone: %v, problems %+v; want one naming snapshot %s and the deregister that forgets its delete", err, rep.Problems, s.ID)
	}
	if !h.deletingRecorded(s.ID) {
		t.Fatal("a reconcile that reached no plugin forgot the recorded delete")
	}
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
	h.reconcileClean(1)
	if h.deletingRecorded(s.ID) || len(h.mem.Snapshots()) != 0 {
		t.Fatalf("after a reconcile reaching the plugin: delete recorded %v, plugin's snapshots %+v; want it finished", h.deletingRecorded(s.ID), h.mem.Snapshots())
	}
}

// `snapshot deregister` of a snapshot whose delete is recorded forgets that too: reconcile,
// which finishes recorded deletes, must not delete what the user chose to leave on the plugin.
// A recorded delete of a snapshot volctl does not record is deregistered the same way.
func TestSnapshotDeregisterForgetsItsRecordedDelete(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.unansweredSnapshotDelete(s.ID)
	h.unansweredSnapshotDelete("unrecorded")
	h.faults.Clear()
	for _, id := range []string{s.ID, "unrecorded"} {
		if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", id); err != nil {
			t.Fatalf("deregister %s: %v", id, err)
		}
		if h.deletingRecorded(id) {
			t.Errorf("deregister %s left its recorded delete", id)
		}
	}
	h.reconcileClean(1)
	if got := h.mem.Snapshots(); len(got) != 1 || got[0].ID != s.ID {
		t.Fatalf("after deregister and reconcile the plugin has %+v; want snapshot %s left there", got, s.ID)
	}
}
