package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestRestoreFromAnUnlistedSnapshotAnsweredWithAnUnnamedSnapshotSourceIsNotSaidCreated: the
// same restore as TestRestoreFromASnapshotThePluginSaysItHasNotIsNotSaidCreated (snapshot_id
// "snap-never-made", which the plugin's ListSnapshots says it does not have, and which volctl
// does not record), through a plugin that ignores the source and makes an empty volume, but
// whose answer carries content_source { snapshot { snapshot_id = "" } }: the snapshot it looked
// up and did not find, its ID left out (the CSI spec makes it REQUIRED). createdVolume's refusal
// of an unlisted restore (SnapshotUnlisted) looks only for a content source that is absent
// (GetContentSource() == nil); the unnamed one passes it, as it passes unnamedSource's check
// (a snapshot was asked) and the comparison of sources (an empty ID reads as none). So the
// empty volume is recorded as restored from the snapshot, "created", exit 0: the user's data is
// not there, which the plugin's own listing said just before. Correct: a source whose ID is left
// out names no snapshot, and the answer is refused as one naming no content source is (the
// volume made for the request deleted again), naming the snapshot the plugin does not have.
// Found by helper review81 (own).
func TestRestoreFromAnUnlistedSnapshotAnsweredWithAnUnnamedSnapshotSourceIsNotSaidCreated(t *testing.T) {
	t.Parallel()
	h := newHarnessServing(t, csitest.WithInterceptor(ignoringContentSource()))
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: withContentSource(&csipb.VolumeContentSource{
		Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{}}})})
	sv := volume("restored")
	sv.SnapshotID = "snap-never-made"
	v, err := h.e.CreateVolume(h.ctx, sv)
	if h.mem.CallCount(csi.RPCListSnapshots) == 0 {
		t.Fatalf("the restore's check did not ask the plugin (ListSnapshots): precondition not met")
	}
	if h.mem.CallCount(csi.RPCCreateVolume) == 0 {
		t.Fatalf("CreateVolume was not sent (%v): precondition not met", err)
	}
	if err == nil {
		t.Fatalf("restore from snapshot %q, which the plugin's listing says it does not have, answered with volume %q whose content source is a snapshot with no ID: "+
			"recorded as volume %q (state %s, snapshot_id %q), nothing said; want it refused as an answer naming no content source is", sv.SnapshotID, v.ExternalID, v.ID, v.State, v.SnapshotID)
	}
	if !strings.Contains(err.Error(), "snap-never-made") {
		t.Errorf("refused restore: %v; want it to name snapshot %q", err, sv.SnapshotID)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin holds %d volume(s) after the refusal (%+v); want the empty one made for the restore deleted again", len(vols), vols)
	}
}
