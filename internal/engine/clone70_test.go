package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestCloneThroughASocketMateAnsweredSmallerThanItsSourceIsRefused: volume "big" (8
// MiB) is recorded through plugin "mem"; "mem2" is a plugin ID on the same socket (one
// process, one storage: socketMates). A clone of big's storage through mem2 (clone_id = big's
// external ID, as TestSourceDeleteRefusedWhileACloneThroughASocketMateIsInFlight clones it)
// answered at 1 MiB cannot hold big's data, as the same clone through mem is refused
// (TestCloneAnsweredSmallerThanItsSourceIsRefused). The doc: "the cloned volume's capacity:
// CreateVolumeRequest.SourceSize ... sourceSize, the smallest where socket mates' records
// differ". sourceSize listed the source by v.PluginID alone for a clone (a restore's looked
// through the socket mates): SourceSize 0, and the 1 MiB answer was recorded ready.
// Found by helper review70.
func TestCloneThroughASocketMateAnsweredSmallerThanItsSourceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	big := h.createBig()
	h.registerPlugin("mem2", h.socket)
	sv := volume("clone")
	sv.PluginID = "mem2"
	sv.CapacityMin = 0
	sv.CloneID = big.ExternalID
	madeSmallerThanItsSource(t, h, sv, "clone through socket mate mem2 of volume big's storage "+big.ExternalID)
}

// TestCloneOfAnUnrecordedVolumeIsNotSizedByANearSpelledOne: on a plugin that
// holds IDs case-sensitively (the default MemPlugin), "vol-1" (volctl's volume big, 8 MiB)
// and "VOL-1" (1 MiB, another volume of the provider, which volctl does not record) are two
// volumes. A clone of "VOL-1" answered at 1 MiB holds all of its source's data: it is a valid
// clone. sourceSize (as a fix of this round first had it) counted every recorded volume whose
// external ID is a near spelling of clone_id (spec.SameStorageID) as the source, even when
// the exact ID is recorded nowhere, so
// big's 8 MiB was taken for VOL-1's size, the valid clone was refused as smaller than its source,
// and the volume the plugin made deleted again.
// Found by helper review70 (own).
func TestCloneOfAnUnrecordedVolumeIsNotSizedByANearSpelledOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	big := h.createBig()
	other := strings.ToUpper(big.ExternalID)
	if other == big.ExternalID {
		t.Fatalf("premise: big's external ID %q has no other case", big.ExternalID)
	}
	h.mem.AddVolume(csi.Volume{ID: other, CapacityBytes: 1 * mib})
	sv := volume("clone")
	sv.CapacityMin = 1 * mib
	sv.CloneID = other
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err != nil {
		t.Fatalf("a clone of the provider's volume %q (1 MiB, recorded nowhere), answered at 1 MiB, was refused, sized by volume big (%q, 8 MiB), another volume on this case-sensitive plugin: %v",
			other, big.ExternalID, err)
	}
	if v.CapacityBytes != 1*mib {
		t.Errorf("clone recorded at %d bytes; want 1 MiB", v.CapacityBytes)
	}
}
