package engine

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestSnapshotCreateAgainForgetsNoSnapshotTheListingNamedBeforeItLooped: volctl records
// snapshot "snap-nightly" (NAME "nightly") of volume db. The plugin, not idempotent by name
// (a generation in its IDs), answers a second `snapshot create db nightly` with a new
// snapshot, "b-nightly", and still holds the first. Before forgetting the first record as
// gone (finishSnapshot's `gone`), volctl asks the plugin whether it still holds it
// (snapshotAbsent); the plugin's ListSnapshots names it on its first page, ready, then gives a
// next_token that loops. snapshotAbsent reads any listing error as "not asked", and a plugin
// not asked is taken at its names' word: the record of a snapshot the plugin just said it
// holds is forgotten, with its secrets and reach, and the command says only "created" of the
// new one. The snapshot is left on the storage tracked by nothing. Correct: what a page named
// before the listing failed is the plugin's word (as findsSnapshotNear's callers take it since
// round 80), and a check that failed is no proof it is gone either: the first record stays
// (as it does when the listing ends cleanly, TestSnapshotCreateAgainForgetsNoSnapshotThePluginStillHolds).
// Found by helper review82 (snapshots).
func TestSnapshotCreateAgainForgetsNoSnapshotTheListingNamedBeforeItLooped(t *testing.T) {
	t.Parallel()
	h, first := nightlySnapshot(t)
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "b-" })
	loopingSnapshotListing(h)
	second, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Logf("create db nightly again: %v", err)
	}
	held := false
	for _, s := range h.mem.Snapshots() {
		held = held || s.ID == first.ID
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
	t.Errorf("after the second `snapshot create db nightly` (answered %q), volctl has no record of %q, which the plugin still holds and named on the first page "+
		"of the listing asked before forgetting it (its next_token then looped); records: %+v", second.ID, first.ID, recs)
}

// TestRestoreOfAnUnrecordedSnapshotListedBeforeTheListingLoopedIsHeldToItsSize: a restore from
// snapshot "s1", which volctl no longer records (deregistered) and the plugin lists at 8 MiB,
// ready. The restore's check (restoreReady) reads the plugin's first page, which names s1 with
// its size and source, then gets a next_token that loops. A ready entry is not decisive, so
// the listing's error wins: a warning that readiness "could not be checked", and everything
// the page said is dropped, the size and the source the answer is held to among it. The
// plugin answers CreateVolume with a volume of 1 MiB, an eighth of the snapshot (the CSI spec:
// a volume restored from a snapshot MUST NOT be smaller than it), and volctl records it ready,
// "created": a truncated restore. With a listing that ends cleanly the same answer is refused
// and the volume deleted again (TestRestoreOfAnUnrecordedSnapshotAnsweredSmallerThanItsListedSizeIsRefused).
// Correct: what the page said of the snapshot before the listing failed is the plugin's word
// (as the round-80 fixes take it for a decisive entry): its size and source are kept for the
// answer's checks, and the 1 MiB answer is refused.
// Found by helper review82 (snapshots).
func TestRestoreOfAnUnrecordedSnapshotListedBeforeTheListingLoopedIsHeldToItsSize(t *testing.T) {
	t.Parallel()
	h, s := eightMiBSnapshot(t, nil)
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID); err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, sn := range h.mem.Snapshots() {
		listed = listed || sn.ID == s.ID && sn.SizeBytes == 8*mib && sn.ReadyToUse
	}
	if !listed {
		t.Fatalf("the plugin does not hold snapshot %q at 8 MiB, ready: %+v", s.ID, h.mem.Snapshots())
	}
	loopingSnapshotListing(h)
	sv := volume("restored")
	sv.CapacityMin = 0 // as large as the snapshot: the plugin's to choose
	sv.SnapshotID = s.ID
	madeSmallerThanItsSource(t, h, sv, fmt.Sprintf("restore from snapshot %s, which the plugin listed at 8 MiB on the page before its next_token looped", s.ID))
}

// TestSnapshotCreateAgainKeepsTheRecordWhenTheListingFails: as above, with the plugin's
// ListSnapshots failing outright (INTERNAL) when asked about the first snapshot: whether the
// plugin still holds it is not known, and a plugin that can be asked is not taken at its
// names' word then: the first record stays (a delete of it finds out).
func TestSnapshotCreateAgainKeepsTheRecordWhenTheListingFails(t *testing.T) {
	t.Parallel()
	h, first := nightlySnapshot(t)
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "b-" })
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Code: codes.Internal})
	second, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatalf("create db nightly again: %v", err)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, first.ID) || !slices.Contains(ids, second.ID) {
		t.Errorf("after the second create (answered %q) with the listing failing, records are %q; want both %q and %q", second.ID, ids, first.ID, second.ID)
	}
}
