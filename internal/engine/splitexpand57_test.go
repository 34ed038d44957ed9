package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A split plugin registered by its controller half alone expands a volume; the answer is lost,
// and the ControllerExpandVolume sent again is answered node_expansion_required false: the
// plugin finds the volume at the size already, and one that does may say the node need do
// nothing. Where the node can be asked, volctl owes the node's step all the same
// (TestExpandRetryAnsweredNodeExpansionNotRequiredStillExpandsTheNode); with the node half not
// registered, it took the answer at its word, and once the node half joined, the volume was
// published with its file system at the old size for good. The node expansion is owed, as a
// guess: NodeExpandVolume is sent at the publish where the node half can expand, and where it
// cannot (no EXPAND_VOLUME: its file system needs no step of its own), the guess is let go,
// not reported as a debt the plugin cannot pay.
func TestSplitPluginsLostExpandAnswerOwesTheNodeStep(t *testing.T) {
	t.Parallel()
	for _, nodeExpands := range []bool{true, false} {
		name := "node half expands"
		if !nodeExpands {
			name = "node half has no EXPAND_VOLUME"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			backend, _, _ := guessOwedThroughASplitPlugin(t, h, nodeExpands)
			cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
			reqs := csitest.Requests[csi.NodeExpandVolumeRequest](backend)
			switch {
			case nodeExpands && (len(reqs) != 1 || reqs[0].VolumePath != cl.TargetPath || reqs[0].CapacityMin != 4*mib):
				t.Errorf("NodeExpandVolume at the publish: %+v, want one at %s", reqs, cl.TargetPath)
			case !nodeExpands && len(reqs) != 0:
				t.Errorf("NodeExpandVolume sent to a node half without EXPAND_VOLUME: %+v", reqs)
			}
			if got := h.owed("v"); got != 0 {
				t.Errorf("node expansion still owed after the publish: %d", got)
			}
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
				t.Errorf("the same expand again, nothing owed: %v", err)
			}
		})
	}
}
