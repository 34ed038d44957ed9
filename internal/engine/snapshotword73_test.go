package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// identityWordSnapshots records two snapshots of volume "db" through a plugin whose snapshot
// IDs are "snap-" and the NAME asked: "weekly-word", named "snap-b" (ID "snap-snap-b"), and
// "b" (ID "snap-b"), so that the word "snap-b" is the NAME of the first and the ID of the
// second. It returns the harness and both snapshots.
func identityWordSnapshots(t *testing.T) (*harness, SnapshotInfo, SnapshotInfo) {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("db"))
	named, err := h.e.CreateSnapshot(h.ctx, "db", "snap-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	ided, err := h.e.CreateSnapshot(h.ctx, "db", "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if named.Name != "snap-b" || ided.ID != "snap-b" || named.ID == ided.ID {
		t.Fatalf("premise: want one snapshot NAMEd %q and another whose ID is %q; got %+v and %+v", "snap-b", "snap-b", named, ided)
	}
	return h, named, ided
}

// TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused: `snapshot delete
// PLUGIN SNAPSHOT_ID|NAME` given a word that is the ID of one recorded snapshot and the NAME
// of another (a plugin whose IDs are a prefix and the NAME asked, or one that answered a
// CreateSnapshot with an ID that is another snapshot's NAME) took it as the ID and deleted
// that snapshot, saying "deleted", while the snapshot `snapshot list` shows under that NAME,
// the one the user may well have meant, stayed. docs/architecture.md has `snapshot delete`
// find a recorded snapshot by its NAME too (`recordNamed`), and refuses a NAME that is two
// snapshots' ("a delete, deregister or restore naming such a NAME is refused, naming each ID,
// where it took the first by ID"): a word that names two recorded snapshots, one by ID and
// one by NAME, is as ambiguous, and deleting either may delete the wrong data. Found by helper review73.
func TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused(t *testing.T) {
	t.Parallel()
	h, named, ided := identityWordSnapshots(t)
	before := len(h.mem.Snapshots())
	err := h.e.DeleteSnapshot(h.ctx, "mem", "snap-b", nil)
	after := len(h.mem.Snapshots())
	if err == nil || after != before {
		t.Fatalf("`snapshot delete mem snap-b`, the NAME of snapshot %q and the ID of snapshot %q (NAME %q): err = %v, the plugin holds %d snapshots, %d before; "+
			"want it refused as naming two recorded snapshots, nothing deleted", named.ID, ided.ID, ided.Name, err, after, before)
	}
	if !strings.Contains(err.Error(), named.ID) || !strings.Contains(err.Error(), ided.ID) {
		t.Errorf("the refusal does not name both snapshots %q and %q: %v", named.ID, ided.ID, err)
	}
	// The refusal's way out: --id takes the word as the ID; then the word names one snapshot,
	// by its NAME, and deletes it.
	if !strings.Contains(err.Error(), "volctl volume snapshot delete mem snap-b --id") {
		t.Fatalf("the refusal does not say how to take the word as the ID: %v", err)
	}
	if _, err := h.e.DeleteSnapshotByIDNoted(h.ctx, "mem", "snap-b", nil); err != nil {
		t.Fatalf("`snapshot delete --id mem snap-b`: %v", err)
	}
	if got := snapshotIDsOf(h.mem.Snapshots()); len(got) != 1 || got[0] != named.ID {
		t.Fatalf("after `snapshot delete --id mem snap-b` the plugin holds %v; want only %q, the other one", got, named.ID)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "snap-b", nil); err != nil {
		t.Fatalf("`snapshot delete mem snap-b`, now the NAME of snapshot %q alone: %v", named.ID, err)
	}
	if got := snapshotIDsOf(h.mem.Snapshots()); len(got) != 0 {
		t.Fatalf("after deleting both the plugin holds %v", got)
	}
}

// snapshotIDsOf is the IDs of snaps.
func snapshotIDsOf(snaps []csi.Snapshot) []string {
	var ids []string
	for _, sn := range snaps {
		ids = append(ids, sn.ID)
	}
	return ids
}

// TestSnapshotDeregisterOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused: `snapshot
// deregister PLUGIN SNAPSHOT_ID|NAME` given a word that is the ID of one recorded snapshot and
// the NAME of another forgot the one of that ID, in silence, leaving its storage recorded
// nowhere, where the user may have meant the one of that NAME. docs/architecture.md:
// "`snapshot deregister` finds a recorded snapshot by its NAME too, as `snapshot delete` does",
// and a NAME that is two snapshots' is refused rather than the first taken. Found by helper review73.
func TestSnapshotDeregisterOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused(t *testing.T) {
	t.Parallel()
	h, named, ided := identityWordSnapshots(t)
	_, err := h.e.DeregisterSnapshot(h.ctx, "mem", "snap-b")
	recs, rerr := h.e.RecordedSnapshots(h.ctx, "mem")
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || len(recs) != 2 {
		t.Fatalf("`snapshot deregister mem snap-b`, the NAME of snapshot %q and the ID of snapshot %q: err = %v, %d records left (%+v); "+
			"want it refused as naming two recorded snapshots, both kept", named.ID, ided.ID, err, len(recs), recs)
	}
	if !strings.Contains(err.Error(), "volctl volume snapshot deregister mem snap-b --id") {
		t.Fatalf("the refusal does not say how to take the word as the ID: %v", err)
	}
	if _, err := h.e.DeregisterSnapshotByID(h.ctx, "mem", "snap-b"); err != nil {
		t.Fatalf("`snapshot deregister --id mem snap-b`: %v", err)
	}
	if recs, err = h.e.RecordedSnapshots(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != named.ID {
		t.Fatalf("after `snapshot deregister --id mem snap-b` volctl records %+v; want only %q", recs, named.ID)
	}
	if got := snapshotIDsOf(h.mem.Snapshots()); len(got) != 2 {
		t.Fatalf("deregister touched the plugin's snapshots: %v", got)
	}
}

// TestSnapshotByIDNeverTakesTheWordForAName: `snapshot delete --id` and `deregister --id` (the
// way out of TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused) of a word
// volctl records as no snapshot's ID, only as a NAME, take nothing by the NAME: the
// delete asks the plugin for that ID (which it does not have: nothing deleted), the
// deregister finds no record; the snapshot of that NAME stays, recorded.
func TestSnapshotByIDNeverTakesTheWordForAName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("db"))
	sn, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.e.DeleteSnapshotByIDNoted(h.ctx, "mem", "nightly", nil)
	if err != nil || !res.Absent {
		t.Fatalf("`snapshot delete --id mem nightly`, a NAME only: %+v, %v; want it found absent, nothing deleted", res, err)
	}
	if _, err := h.e.DeregisterSnapshotByID(h.ctx, "mem", "nightly"); err == nil {
		t.Fatalf("`snapshot deregister --id mem nightly`, a NAME only, succeeded; want no record found by that ID")
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != sn.ID || len(h.mem.Snapshots()) != 1 {
		t.Fatalf("after --id of its NAME: records %+v, plugin %v; want %q kept", recs, snapshotIDsOf(h.mem.Snapshots()), sn.ID)
	}
}

// TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAPendingOnesNameIsRefused: the word is the ID
// of a recorded snapshot ("snap-b", NAME "b") and the NAME of a snapshot being created (its
// CreateSnapshot's answers lost): refused as two, nothing deleted; --id deletes the recorded one
// alone, the pending create kept. A snapshot whose ID is its own NAME, created again, is one
// (TestSnapshotDeleteRecordedAfterTheCreateLookedKeepsItsRecord).
func TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAPendingOnesNameIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("db"))
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "b", nil); err != nil {
		t.Fatal(err)
	}
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "snap-b", nil); err == nil {
		t.Fatal("a snapshot with every answer lost succeeded")
	}
	h.faults.Clear()
	err := h.e.DeleteSnapshot(h.ctx, "mem", "snap-b", nil)
	if err == nil || !strings.Contains(err.Error(), "being created (pending)") {
		t.Fatalf("`snapshot delete mem snap-b`, the ID of a recorded snapshot and a pending one's NAME: %v; want it refused naming both", err)
	}
	if _, err := h.e.DeleteSnapshotByIDNoted(h.ctx, "mem", "snap-b", nil); err != nil {
		t.Fatalf("`snapshot delete --id mem snap-b`: %v", err)
	}
	var pending bool
	h.update(func(tx *store.Tx) error {
		_, gerr := tx.Snapshots().GetCreate("mem", "snap-b")
		pending = gerr == nil
		return nil
	})
	if !pending {
		t.Errorf("the pending create NAMEd snap-b was forgotten by the delete --id of the snapshot of that ID")
	}
}
