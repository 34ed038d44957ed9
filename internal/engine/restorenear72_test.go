package engine

import (
	"errors"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestRestoreFromANearSpellingListedNotReadyIsRefused: a plugin that reads IDs
// case-insensitively (a near spelling is the same snapshot to it, as nearSnapshot and
// refuseRestoreInFlight have it), asked before a restore from snapshot_id "NIGHTLY" for that
// snapshot, listed the one it has under it, in its own spelling "nightly", not ready. The entry
// was skipped as another ID, the snapshot taken for not found, and CreateVolume sent from a
// snapshot the plugin had said was not ready. Found by helper review72.
func TestRestoreFromANearSpellingListedNotReadyIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.snapshot("nightly") // the mem plugin's snapshot IDs are their names
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{
		When: func(req proto.Message) bool { return req.(*csipb.ListSnapshotsRequest).GetSnapshotId() == "NIGHTLY" },
		Answer: func(m proto.Message) {
			resp := m.(*csipb.ListSnapshotsResponse)
			resp.Entries = []*csipb.ListSnapshotsResponse_Entry{{Snapshot: &csipb.Snapshot{
				SnapshotId: "nightly", SourceVolumeId: "db", ReadyToUse: false}}}
		}})
	sv := volume("r")
	sv.SnapshotID = "NIGHTLY"
	before := h.mem.CallCount(csi.RPCCreateVolume)
	_, err := h.e.CreateVolume(h.ctx, sv)
	sent := h.mem.CallCount(csi.RPCCreateVolume) - before
	t.Logf("restore from %q: %v; CreateVolume sent %d times; ListSnapshots %d calls", sv.SnapshotID, err, sent, h.faults.Calls(csi.RPCListSnapshots))
	if sent > 0 || !errors.Is(err, ErrConflict) {
		t.Errorf("restore from snapshot_id %q, which the plugin (reading IDs case-insensitively) listed as its snapshot %q, not ready: "+
			"CreateVolume sent %d times, error %v; want it refused as not ready, nothing sent", sv.SnapshotID, "nightly", sent, err)
	}
}
