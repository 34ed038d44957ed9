package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin listing a snapshot volctl made, under its recorded ID, but naming its source volume
// by an ID past csi.MaxObjectID: the snapshot is listed, without that source (the one volctl
// recorded shown), and the warning says so. Before, withoutOversizedIDs dropped the entry,
// saying "no snapshot volctl made has one", and the listing being complete, the recorded
// snapshot was shown missing: `snapshot list` said "missing" of a snapshot the plugin had just
// listed, which a user would then deregister, leaving it on the storage tracked by nothing.
// Found by helper review61.
func TestRecordedSnapshotListedWithAnOversizedSourceIsNotMissing(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("s1")
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Answer: func(m proto.Message) {
		for _, en := range m.(*csipb.ListSnapshotsResponse).Entries {
			en.Snapshot.SourceVolumeId = strings.Repeat("x", csi.MaxObjectID+1)
		}
	}})
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, got := range list.Snapshots {
		if got.ID != s.ID {
			continue
		}
		found = true
		if got.Missing || !got.Listed || got.SourceVolumeID != "db" {
			t.Errorf("recorded snapshot %q, which the plugin listed (its source named by a %d-byte ID): missing %v, listed %v, source %q; want listed, source db as recorded",
				s.ID, csi.MaxObjectID+1, got.Missing, got.Listed, got.SourceVolumeID)
		}
	}
	if !found {
		t.Errorf("recorded snapshot %q is not in the listing: %+v", s.ID, list.Snapshots)
	}
	if w := strings.Join(list.Warnings, "\n"); !strings.Contains(w, "shown without that source") || strings.Contains(w, "no snapshot volctl made has one") {
		t.Errorf("warnings %q; want the oversized source said, and no claim that volctl made no such snapshot", w)
	}
}
