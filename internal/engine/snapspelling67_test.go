package engine

import (
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPendingSnapshotDeleteSeesASnapshotListedUnderItsSourcesOtherSpelling: a
// snapshot create's CreateSnapshot went unanswered having made the snapshot; the delete by
// NAME then finds CreateSnapshot refused for good, and asks the plugin for the source's
// snapshots (unrecordedSnapshotsOf). The plugin, one that reads IDs in its own spelling
// (case-insensitive backend), lists the snapshot it made with source_volume_id in upper case.
// The listing was filtered by that very source, and spec.SameStorageID says it is the one
// storage (the listing's own merge, markSourcesGone, reads it so). The check compared byte for
// byte, saw no snapshot of the volume, and forgot the create under "the plugin lists no
// snapshot of the volume that volctl records nothing of": the snapshot made was left on the
// storage, tracked by nothing, under a delete that succeeded. Found by helper review67.
func TestPendingSnapshotDeleteSeesASnapshotListedUnderItsSourcesOtherSpelling(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("v"))
	pendingSnapshotMade(t, h, "nightly", true)
	made := h.mem.Snapshots()[0].ID
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Answer: func(m proto.Message) {
		for _, en := range m.(*csipb.ListSnapshotsResponse).GetEntries() {
			en.Snapshot.SourceVolumeId = strings.ToUpper(en.Snapshot.SourceVolumeId)
		}
	}})
	h.faults.FailOnce(csi.RPCCreateSnapshot, codes.Unimplemented)
	_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil)
	t.Logf("delete: %v", err)
	_, creates := snapshotsKnown(h, "v")
	if err == nil || !slices.Equal(creates, []string{"nightly"}) {
		t.Errorf("delete of pending snapshot nightly, the plugin listing snapshot %s it made with the source spelled in upper case: err %v, creates recorded %v; "+
			"want the delete refused and nightly kept, as when the listing spells the source as recorded", made, err, creates)
	}
	if !slices.ContainsFunc(h.mem.Snapshots(), func(sn csi.Snapshot) bool { return sn.ID == made }) {
		t.Fatalf("the plugin no longer holds %s", made)
	}
}

// TestSnapshotAnsweredWithItsSourceInAnotherSpellingIsNotAnotherVolumes: a plugin
// that reads IDs in its own spelling (a case-insensitive backend) answers CreateSnapshot of
// volume v with source_volume_id in upper case: v's storage by spec.SameStorageID, the rule
// `snapshot list` applies to the same snapshot
// (TestSnapshotListedWithAnotherSourceSpellingIsNotSourceGone, which shows it as v's). The
// create refused it as "a snapshot of another volume", forgot the intent, and left the
// snapshot the plugin made of v on the storage, tracked by nothing; every later snapshot of v
// the same, one more leaked per try. It is recorded as v's now. Found by helper review67.
func TestSnapshotAnsweredWithItsSourceInAnotherSpellingIsNotAnotherVolumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Answer: func(m proto.Message) {
		sn := m.(*csipb.CreateSnapshotResponse).GetSnapshot()
		sn.SourceVolumeId = strings.ToUpper(sn.SourceVolumeId)
	}})
	sn, err := h.e.CreateSnapshot(h.ctx, "v", "nightly", nil)
	t.Logf("create: %+v %v", sn, err)
	ids, creates := snapshotsKnown(h, "v")
	held := len(h.mem.Snapshots())
	if err != nil || len(ids) != 1 {
		t.Errorf("snapshot of v answered with v's external ID in upper case: err %v; recorded %v, creates %v, the plugin holding %d snapshot(s); "+
			"want it recorded as v's snapshot (or at least kept tracked), not refused as another volume's and left on the storage untracked", err, ids, creates, held)
	}
}
