package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestStatusOfAnOwedStepThroughAnOnlinePluginDoesNotSayOfflineOnly: a node-only expansion's
// debt (the controller never had the size) on a volume off the node, through a plugin that came
// back with the controller's EXPAND_VOLUME and VOLUME_EXPANSION ONLINE. `volume status`
// (owedExpansionWaits) said the plugin "expands only offline" and that `volctl reconcile` sends
// ControllerExpandVolume while the volume is off the node: reconcile sends nothing for such a
// debt (expandOffNode: an ONLINE plugin's step goes with the node's, at the publish). The status
// named the wrong capability and advised a command that does nothing. Found by helper review71.
func TestStatusOfAnOwedStepThroughAnOnlinePluginDoesNotSayOfflineOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = true }) // ONLINE, as by default
	h.registerPlugin("mem", h.socket)                                              // fingerprinted and recorded
	waits := h.volumeInfo("v").NodeExpansionWaits
	t.Logf("status says: %s", waits)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	sent := h.mem.CallCount(csi.RPCControllerExpandVolume)
	if strings.Contains(waits, "only offline") {
		t.Errorf("status of the owed expansion through plugin \"mem\", which advertises VOLUME_EXPANSION ONLINE, says it expands only offline:\n  %s", waits)
	}
	if strings.Contains(waits, "`volctl reconcile`") && sent == 0 {
		t.Errorf("status advises `volctl reconcile` to send ControllerExpandVolume, and reconcile sent none (owed still %d):\n  %s",
			h.owed("v"), waits)
	}
	// What it says now: the next claim's publish sends both.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a-0"}); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if got := h.mem.CallCount(csi.RPCControllerExpandVolume); got == sent || h.owed("v") != 0 {
		t.Errorf("the claim's publish sent ControllerExpandVolume %d times (before it %d) and left %d owed; the status said it sends it, then the NodeExpandVolume",
			got, sent, h.owed("v"))
	}
}
