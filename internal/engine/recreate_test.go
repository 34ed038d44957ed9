package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin restarted for a while with another root answers DeleteVolume NOT_FOUND (CSI's
// "already gone") for a volume its real state still holds; a plugin that deletes lazily keeps
// the name a while. Either way the delete is done for volctl, and the storage stays. The next
// create of the same ID must get new storage, not that one: CreateVolume is idempotent by
// name, and a name derived from the ID alone handed the new volume the deleted one's storage
// and its data (the chaos run: a file written to v12 before its delete was in v12 created
// again). Each create sends a name of its own.
//
// The plugin here cannot list (no LIST_VOLUMES), so its NOT_FOUND is all volctl has; one that
// lists and contradicts it keeps the volume deleting
// (TestDeleteAnsweredNotFoundWhileStillListedKeepsTheVolumeDeleting).
func TestCreateAfterADeleteThePluginDidNotDoGetsNewStorage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = false })
	first := h.create(volume("v"))
	h.faults.FailAlways(csi.RPCDeleteVolume, codes.NotFound) // answered without deleting
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatal(err)
	}
	h.faults.Clear()
	again := h.create(volume("v"))
	if again.ExternalID == first.ExternalID {
		t.Fatalf("volume v created again got external ID %q, the deleted volume's storage (CSI name %q, then %q)", again.ExternalID, first.CSIName, again.CSIName)
	}
	req, _ := csitest.LastRequest[csi.CreateVolumeRequest](h.mem)
	if req.Name != again.CSIName || req.Name == first.CSIName {
		t.Errorf("CreateVolume name %q, recorded %q, first create's %q: want the recorded name, not the first's", req.Name, again.CSIName, first.CSIName)
	}
}
