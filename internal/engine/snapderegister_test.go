package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin answers DeleteSnapshot OK and keeps listing the snapshot, for good: DeleteSnapshot
// keeps the record (the snapshot is someone's data), and every delete again fails the same way.
// The way out, named by the delete's error, is DeregisterSnapshot: it forgets the record
// without sending anything, leaves the plugin's snapshot where it is, and says so (a warning
// and an event naming it), so that no data is lost or left unaccounted for without a word.
// The snapshot is then listed as the plugin's, not volctl's; deregistering it again is not
// found. A pending snapshot (its creation cut short) is deregistered by its NAME: the intent
// goes, and reconcile no longer sends CreateSnapshot for it.
func TestDeregisterSnapshotForgetsARecordThePluginKeepsListing(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
	s := h.snapshot("kept")
	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	way := "`volctl volume snapshot deregister mem " + s.ID + "`"
	if err == nil || !strings.Contains(err.Error(), way) {
		t.Fatalf("delete of a snapshot the plugin keeps listing: %v; want the error to name the way out, %s", err, way)
	}
	warnings, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID)
	if err != nil {
		t.Fatalf("deregister: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "forgotten, not deleted") || !strings.Contains(warnings[0], s.ID) {
		t.Errorf("warnings %q; want one saying snapshot %s is forgotten, not deleted", warnings, s.ID)
	}
	if h.recordedSnapshot(s.ID) {
		t.Errorf("snapshot %s still recorded after deregister", s.ID)
	}
	if snaps := h.mem.Snapshots(); len(snaps) != 1 || snaps[0].ID != s.ID {
		t.Errorf("the plugin holds %+v after deregister; want snapshot %s left as it was", snaps, s.ID)
	}
	if n := h.faults.Calls(csi.RPCDeleteSnapshot); n != 1 {
		t.Errorf("DeleteSnapshot sent %d times; want only the delete's (deregister sends nothing)", n)
	}
	if msgs := h.eventMessages("snapshot-deregister", "db"); !strings.Contains(msgs, "deregistered; its storage was not touched") {
		t.Errorf("snapshot-deregister events %q; want one saying the storage was not touched", msgs)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil || len(list.Snapshots) != 1 || list.Snapshots[0].Recorded || !list.Snapshots[0].Listed {
		t.Errorf("list after deregister: %+v, %v; want the snapshot listed by the plugin, not recorded", list.Snapshots, err)
	}
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deregister again: %v; want not found", err)
	}

	// A pending snapshot, by its NAME.
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Times: 10})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "cut", nil); err == nil {
		t.Fatal("snapshot succeeded with every CreateSnapshot unavailable")
	}
	h.faults.Clear(csi.RPCCreateSnapshot)
	warnings, err = h.e.DeregisterSnapshot(h.ctx, "mem", "cut")
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `"cut"`) || !strings.Contains(warnings[0], "may have made it") {
		t.Fatalf("deregister of a pending snapshot: %q, %v; want a warning that the plugin may have made it", warnings, err)
	}
	before := h.faults.Calls(csi.RPCCreateSnapshot)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if n := h.faults.Calls(csi.RPCCreateSnapshot); n != before {
		t.Errorf("reconcile sent CreateSnapshot for a deregistered pending snapshot (%d calls, %d before)", n, before)
	}
}
