package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// finishSnapshot's `gone` forgot the record of a snapshot recorded under a NAME whenever a
// create of that NAME is answered with another ID, on the plugin's word alone that names are
// unique, without asking (ListSnapshots by ID, asked now) whether the recorded snapshot is still there.
// A plugin that answers a new snapshot for a name it still holds one under (not idempotent
// by name, or names scoped by a generation) had volctl forget a live snapshot, with its
// recorded secrets and reach, which nothing volctl does can delete afterwards; before, both
// stayed recorded. Elsewhere volctl does not take such an answer on trust ("the plugin maps
// two names onto one snapshot: report it to the plugin's authors"). Found by helper review63
// (own2).
func TestSnapshotCreateAgainForgetsNoSnapshotThePluginStillHolds(t *testing.T) {
	t.Parallel()
	h, first := nightlySnapshot(t)
	// The plugin now answers a create of "nightly" with a new snapshot, the first one kept.
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "b-" })
	second, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Logf("create db nightly again: %v", err)
	}
	held := false
	for _, s := range h.mem.Snapshots() {
		if s.ID == first.ID {
			held = true
		}
	}
	if !held {
		t.Fatalf("premise: the plugin no longer holds %q", first.ID)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == first.ID {
			return
		}
	}
	t.Errorf("after the second `snapshot create db nightly` (answered %q), volctl has no record of %q, which the plugin still holds and lists; records: %+v", second.ID, first.ID, recs)
}
