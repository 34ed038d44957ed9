package engine

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A CreateSnapshot whose answer is lost is sent again, and the plugin answers the second
// time with the same snapshot but no size (size_bytes 0: a plugin that says a snapshot's size
// when it takes it, not again). The lost answer was the only one that said it; the plugin
// still lists it with its size, and the record must take that, not 0 (unknown), which `volume
// snapshot list` shows and a restore's size check goes by.
func TestSnapshotAnsweredAgainWithoutASizeAfterALostAnswerTakesTheListedSize(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.createBig()
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Times: 1, Lost: true})
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.CreateSnapshotResponse).Snapshot.SizeBytes = 0
	}})
	s, err := h.e.CreateSnapshot(h.ctx, "big", "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.faults.Calls(csi.RPCCreateSnapshot); got != 2 {
		t.Fatalf("premise: CreateSnapshot sent %d times, want 2 (the first answer lost)", got)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == s.ID && r.SizeBytes != 8*mib {
			t.Errorf("snapshot %q of an 8 MiB volume, its first answer lost and the second without a size, is recorded at %d bytes; the plugin lists it at %d",
				s.ID, r.SizeBytes, 8*mib)
		}
	}
}
