package engine

import (
	"fmt"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// manyNodes are n distinct short node IDs, as many as fit a ListVolumes answer under gRPC's
// 4 MiB: a hostile plugin listing a volume published to hundreds of thousands of nodes.
func manyNodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%06d", i)
	}
	return out
}

// Reconcile finishing an interrupted delete asks the plugin, under its controller lock and
// within the check's bound (Config.ListCheck: a plugin holds the lock for at most that long),
// which nodes hold the volume (publishedNodes). A hostile plugin lists the volume with 150,000
// distinct published_node_ids in one page (1.4 MB, under gRPC's 4 MiB). Before,
// publishedNodes de-duplicated them with slices.Contains over the list kept so far, n²/2
// string comparisons, in a loop that never looks at the bound's context: the pass spun on one
// CPU for 39 s, holding the plugin's controller lock and the volume's lock, far past the 2 s
// bound (0.3 s now; the 15 s this allows is a liveness bound, not a performance target).
// Found by helper review64.
func TestDeleteCheckOfAVolumeListedOnManyNodesIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{ListCheck: 2 * time.Second, Timeouts: contentTimeouts})
	ext := h.create(volume("v")).ExternalID
	h.markDeleting("v")
	nodes := manyNodes(150_000)
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Answer: func(m proto.Message) {
		for _, en := range m.(*csipb.ListVolumesResponse).GetEntries() {
			if en.GetVolume().GetVolumeId() == ext {
				en.Status = &csipb.ListVolumesResponse_VolumeStatus{PublishedNodeIds: nodes}
			}
		}
	}})
	began := time.Now()
	rep, err := h.e.Reconcile(h.ctx)
	took := time.Since(began)
	t.Logf("reconcile took %s: %v (%d problems)", took, err, len(rep.Problems))
	if took > 15*time.Second {
		t.Errorf("reconcile finishing the delete took %s with a 2s ListCheck bound: the check of the nodes holding the volume ran unbounded (quadratic de-duplication of published_node_ids) while holding the plugin's controller lock", took.Round(time.Second))
	}
}
