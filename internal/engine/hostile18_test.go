package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a plugin that lists a snapshot still being processed (ready_to_use false)
// twice, first ready and then as it is (a listing that disagrees with itself: two backends
// merged, offset paging over a list that changed). The restore's check took the first entry,
// said ready, and sent CreateVolume from a snapshot the plugin itself said, on the same
// listing, is not ready: a volume missing what the processing had not done. Any entry saying
// not ready counts, the safe answer, as for a volume listed published (listsPublished).
func TestRestoreCheckedByASnapshotListingThatDisagreesWithItself(t *testing.T) {
	h, db := snapshotHarness(t, nil)
	processing := csi.Snapshot{ID: "snap-uploading", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes}
	h.mem.AddSnapshot(processing)
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ListSnapshotsResponse)
		var twice []*csipb.ListSnapshotsResponse_Entry
		for _, en := range resp.GetEntries() {
			ready := proto.Clone(en).(*csipb.ListSnapshotsResponse_Entry)
			ready.Snapshot.ReadyToUse = true
			twice = append(twice, ready, en)
		}
		resp.Entries = twice
	}})
	h.mem.ResetCalls()
	sv := volume("restored")
	sv.SnapshotID = processing.ID
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `snapshot "snap-uploading"`) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("restore from a snapshot listed both ready and not ready = %v; want a conflict naming it not ready", err)
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCCreateVolume) {
		t.Errorf("RPCs = %v, want no CreateVolume", got)
	}
}
