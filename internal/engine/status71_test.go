package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestOwedExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack: a volume handed over to Nomad
// with --force while a node expansion is owed: the expansion waits for the volume to be taken
// back, and reconcile and `volume expand` leave it so. `volume status ID` says why an owed node
// expansion waits and what does it (node_expansion_waits), but owedExpansionWaits never looked
// at the handover: it named `volctl reconcile` and the next claim, which do nothing for a
// handed-over volume (the claim is refused), and said nothing of the take-back that does it.
// Found by helper review71.
func TestOwedExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack(t *testing.T) {
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	h.restartWith(offlineOnlyExpansion)
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	info, err := h.e.VolumeShown(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if info.NodeExpansionOwed != 4*mib || info.Handover == nil {
		t.Fatalf("owed %d, handover %+v; want 4MiB owed on a handed-over volume", info.NodeExpansionOwed, info.Handover)
	}
	w := info.NodeExpansionWaits
	if !strings.Contains(w, "Nomad") && !strings.Contains(w, "taken back") && !strings.Contains(w, "nomad release") {
		t.Errorf("node_expansion_waits of a volume handed over to Nomad = %q; want it to say the expansion waits for the take-back (volctl nomad release)", w)
	}
	// What it names instead: a claim, which is refused while Nomad has the volume.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil || !strings.Contains(err.Error(), "Nomad") {
		t.Fatalf("claim of the handed-over volume: %v; want it refused", err)
	}
}

// TestOwedExpansionOfAClaimedHandedOverVolumeAdvisesNoCommandThatIsRefused: the same volume
// claimed here when it was handed over with --force, its NodeExpandVolume failed:
// node_expansion_waits advised `volctl reconcile` or `volctl volume expand`, and the expand it
// named is refused ("handed over to Nomad") while reconcile sends nothing. Found by helper
// review71.
func TestOwedExpansionOfAClaimedHandedOverVolumeAdvisesNoCommandThatIsRefused(t *testing.T) {
	h, _ := claimedWithNodeExpansionOwed(t)
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	info, err := h.e.VolumeShown(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	w := info.NodeExpansionWaits
	if info.NodeExpansionOwed != 4*mib {
		t.Fatalf("owed %d; want 4MiB", info.NodeExpansionOwed)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil || !strings.Contains(err.Error(), "handed over to Nomad") {
		t.Fatalf("expand of the handed-over volume: %v; want it refused", err)
	}
	if strings.Contains(w, "volume expand") || !strings.Contains(w, "Nomad") {
		t.Errorf("node_expansion_waits of a volume handed over to Nomad = %q; it advises `volume expand`, refused while Nomad has it, and says nothing of the take-back that lets the expansion go on", w)
	}
}
