package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestDeregisterAdviceForANodeExpansionOwedToANodeWithoutExpandVolumePaysNothing: volume v was
// expanded while on no path here (ControllerExpandVolume answered node_expansion_required, so a
// NodeExpandVolume is owed), and its plugin then restarted with a node service that no longer
// declares EXPAND_VOLUME. `volctl volume deregister v` is refused for the debt and advises
// "claim it once to finish the expansion (`volctl volume claim v --alloc expand`, then
// `volctl volume release v --alloc expand`), then deregister it". Followed, the claim's publish
// sends no NodeExpandVolume (the node cannot take one: expandOnPublish returns in silence), the
// debt stays, and the deregister is refused again with the very same advice: a loop, the only
// exit being --force, which forgets the debt. `volume status` (owedExpansionWaits) and
// `volume expand` already say the real cause. Correct: the refusal names what pays the debt for
// the plugin as it is (its node service lacks EXPAND_VOLUME: start it with that capability,
// then claim/expand), and never advises a claim and release that cannot pay it; or the advised
// claim and release pay it. At fault: refuseOwedNodeExpansion / payOwedNodeStep
// (volumes_register.go, expand.go), which advise the claim whatever the plugin's node can do
// (the handover refusal in handover.go uses the same advice).
// Found by helper review77 (expand).
func TestDeregisterAdviceForANodeExpansionOwedToANodeWithoutExpandVolumePaysNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AnswerNodeExpansionRequired(true)
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand: %v", err)
	}
	if got := h.owed("v"); got != 4*mib {
		t.Fatalf("premise: node expansion owed = %d, want %d", got, 4*mib)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Node.ExpandVolume = false })

	_, refusal := h.e.DeregisterVolume(h.ctx, "v", false)
	if !errors.Is(refusal, ErrConflict) {
		t.Fatalf("deregister of v owing a NodeExpandVolume: %v, want a conflict", refusal)
	}
	claim := "`volctl volume claim v --alloc expand`"
	if strings.Contains(refusal.Error(), claim) || !strings.Contains(refusal.Error(), "EXPAND_VOLUME") {
		t.Fatalf("deregister refusal = %v\nwant it naming the node's missing EXPAND_VOLUME capability, and no claim that cannot pay the debt", refusal)
	}
	// The advice followed: the plugin with that capability again, then a claim pays it.
	h.restartWith(func(c *csitest.MemConfig) { c.Node.ExpandVolume = true })
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "expand"})
	h.release("v", "expand")
	if got := h.owed("v"); got != 0 {
		t.Fatalf("after the plugin got EXPAND_VOLUME back and a claim published v, %d is still owed", got)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Errorf("deregister once the debt was paid: %v", err)
	}
}
