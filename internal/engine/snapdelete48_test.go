package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestSnapshotDeletedByAnotherVolctlMeanwhileIsNotDeletedTwice: two `volume snapshot delete`
// of one snapshot at once. The second read the snapshot's record, waited for the first's lock,
// and went on from what it had read: the plugin answered OK for the snapshot it no longer had
// (CSI's DeleteSnapshot is idempotent), and both said "deleted", each recording it in the event
// log. Under the lock the record is read again, and a snapshot forgotten meanwhile is one volctl
// records nothing of, which the plugin is asked about: the second says nothing was there to
// delete (res.Absent), and one "deleted" event is recorded.
func TestSnapshotDeletedByAnotherVolctlMeanwhileIsNotDeletedTwice(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	var (
		res SnapshotDeleted
		err error
	)
	derr := h.duringOthersSnapshotDelete(s.ID, "second delete", func(ctx context.Context) {
		res, err = h.e.DeleteSnapshotNoted(ctx, "mem", s.ID, nil)
	})
	if derr != nil {
		t.Fatalf("the first delete: %v", derr)
	}
	if err != nil {
		t.Fatalf("the second delete, which waited for the first: %v", err)
	}
	if !res.Absent {
		t.Errorf("the second delete, after the first deleted the snapshot: %+v; want it to say nothing was there to delete", res)
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("the plugin has %d snapshots after the deletes; want none", n)
	}
	evs, eerr := h.e.Events(h.ctx, 0, EventFilter{Kind: "snapshot-delete"})
	if eerr != nil {
		t.Fatal(eerr)
	}
	deleted := 0
	for _, ev := range evs {
		if ev.RPC == csi.RPCDeleteSnapshot && strings.HasSuffix(ev.Message, "deleted") {
			deleted++
		}
	}
	if deleted != 1 {
		t.Errorf("events say the snapshot was deleted %d times; want once: %+v", deleted, evs)
	}
}
