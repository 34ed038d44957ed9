package engine

import (
	"fmt"
	"maps"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A volume attached to node-1 for a claim, the host rebooted (the claim's mounts gone), and the
// plugin back as node-2 (host renamed under `--node-id $(hostname)`) and without
// PUBLISH_UNPUBLISH_VOLUME (started without `--enable-attach`). architecture.md, "Capabilities
// across a restart": the volumes attached to the old node are ones "which no claim or restore
// stages here with that attachment (attachedElsewhere)", because node-1's publish_context "on this
// node may name another volume's device" (TestRestoreAfterNodeIDChangeSendsNoOtherNodesAttachment
// holds it for a plugin that still attaches). attachedElsewhere returned early when the plugin no
// longer attached, and publishContext handed the claim's own copy, node-1's, to the node calls:
// the restore sent NodeStageVolume (NodePublishVolume for a plugin that does not stage) with
// node-1's publish_context to the plugin on node-2, and reported the claim restored. It is
// refused, the claim held degraded, as for a plugin that still attaches. (restart review)
func TestRestoreAfterNodeIDChangeThroughAPluginThatStoppedAttaching(t *testing.T) {
	t.Parallel()
	for _, stages := range []bool{true, false} {
		t.Run(fmt.Sprintf("stages %t", stages), func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = stages })
			h.claimThenReboot("v", "a", spec.SingleNodeWriter)
			st, _ := h.staging("v")
			if !st.ControllerPublished || st.NodeID != "node-1" || len(st.PublishContext) == 0 {
				t.Fatalf("staging before the restart = %+v; want attached to node-1 with a publish_context", st)
			}
			old := st.PublishContext
			h.restartWith(func(c *csitest.MemConfig) {
				c.NodeID = "node-2"
				c.Controller.PublishUnpublishVolume = false
			})

			rep, err := h.e.Reconcile(h.ctx)
			var sent []string
			for _, r := range csitest.Requests[csi.NodeStageVolumeRequest](h.mem) {
				if len(old) > 0 && maps.Equal(r.PublishContext, old) {
					sent = append(sent, csi.RPCNodeStageVolume)
				}
			}
			for _, r := range csitest.Requests[csi.NodePublishVolumeRequest](h.mem) {
				if len(old) > 0 && maps.Equal(r.PublishContext, old) {
					sent = append(sent, csi.RPCNodePublishVolume)
				}
			}
			if len(sent) > 0 {
				t.Errorf("%v sent to the plugin on node-2 with node-1's publish_context %v (reconcile: %+v, %v)", sent, old, rep.Actions, err)
			}
		})
	}
}
