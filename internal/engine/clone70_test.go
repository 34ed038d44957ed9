package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
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
	src := volume("big")
	src.CapacityMin = 8 * mib
	big := h.create(src)
	h.registerPlugin("mem2", h.socket)
	sv := volume("clone")
	sv.PluginID = "mem2"
	sv.CapacityMin = 0
	sv.CloneID = big.ExternalID
	madeSmallerThanItsSource(t, h, sv, "clone through socket mate mem2 of volume big's storage "+big.ExternalID)
}

// TestCloneFromANearSpellingAnsweredSmallerThanItsSourceIsRefused: on a plugin that
// reads IDs regardless of case (FoldIDs), volume "big" (8 MiB) is recorded with storage ID
// "VOL-9", which the plugin holds as "vol-9" (it answered big's create in that spelling). A
// clone whose clone_id is "vol-9", the plugin's own spelling, is a clone of big: the doc and
// refuseCloneInFlight / cloneSource take a clone_id in another spelling of a source's storage
// ID (spec.SameStorageID) for that source (TestSourceDeleteRefusedWhileACloneFromItsNearSpellingIsInFlight).
// sourceSize matched the clone_id exactly (VolumeFilter.ExternalID): SourceSize 0, and a clone
// answered at 1 MiB, which cannot hold big's 8 MiB, was recorded ready.
// Found by helper review70.
func TestCloneFromANearSpellingAnsweredSmallerThanItsSourceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	h.mem.AddVolume(csi.Volume{ID: "vol-9", CapacityBytes: 8 * mib})
	h.mem.AnswerCreateWith("VOL-9")
	src := volume("big")
	src.CapacityMin = 8 * mib
	big := h.create(src)
	h.mem.AnswerCreateWith("")
	if big.ExternalID != "VOL-9" || big.CapacityBytes != 8*mib {
		t.Fatalf("big recorded as %q at %d bytes; want \"VOL-9\" at 8 MiB", big.ExternalID, big.CapacityBytes)
	}
	sv := volume("clone")
	sv.CapacityMin = 0
	sv.CloneID = "vol-9"
	madeSmallerThanItsSource(t, h, sv, "clone from \"vol-9\", volume big's storage \"VOL-9\" spelled otherwise,")
}
