package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A volume whose controller expansion left a NodeExpandVolume owed (node_expansion_required, the
// volume on no path here: volctl sends it at the next publish) is not handed over unless forced:
// Nomad, which sends NodeExpandVolume only while it expands a claimed volume, would never send
// it, and its allocs would get the filesystem at the old size while Nomad records the new one.
// The refusal names the size and what finishes the expansion; forced, it stays owed for after
// the take-back.
func TestHandOverRefusesAnOwedNodeExpansionUnlessForced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatal(err)
	}
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	_, err := h.e.HandOver(h.ctx, "v", to, false, nil)
	if err == nil {
		t.Fatalf("handed over a volume owed a NodeExpandVolume: the expansion would be lost in Nomad")
	}
	for _, want := range []string{`volume "v"`, "NodeExpandVolume", "4MiB", "`volctl volume claim v --alloc expand`", "`volctl volume release v --alloc expand`", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal: %v\nwant it to say %q", err, want)
		}
	}
	if hs, _ := h.e.Handovers(h.ctx, "v"); len(hs) != 0 {
		t.Fatalf("refused handover left a mark: %+v", hs)
	}
	if _, err := h.e.HandOver(h.ctx, "v", to, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	if got := h.owed("v"); got != 4*mib {
		t.Errorf("node expansion owed after a forced handover = %d, want %d (for after the take-back)", got, 4*mib)
	}
}

// A volume with an expansion pending (ControllerExpandVolume sent, its answer lost) is not
// handed over unless forced: Nomad would register it at the old size and never finish the
// expansion. The refusal names the size and that reconcile finishes it; forced, reconcile
// leaves the expansion pending for after the take-back, reporting no problem each pass.
func TestHandOverRefusesAPendingExpansionUnlessForced(t *testing.T) {
	t.Parallel()
	h := expansionPendingThroughAPluginThatCannotList(t)
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	_, err := h.e.HandOver(h.ctx, "v", to, false, nil)
	if err == nil {
		t.Fatalf("handed over a volume with an expansion pending: Nomad would never finish it")
	}
	for _, want := range []string{`volume "v"`, "expansion to 4MiB pending", "`volctl reconcile`", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal: %v\nwant it to say %q", err, want)
		}
	}
	if _, err := h.e.HandOver(h.ctx, "v", to, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile of a handed-over volume with an expansion pending: %v, want it left for the take-back", err)
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Errorf("expansion pending after a forced handover and a reconcile = %d, want %d (for after the take-back)", v.ExpansionPending, 4*mib)
	}
}

// A volume handed over (forced) with its own ControllerExpandVolume pending, taken back once its
// plugin lists it at that size: the growth may be volctl's own expansion, whose answer was
// lost, and was said "grown while handed over to Nomad" as if Nomad had grown it; nor did the
// handover's event say the expansion was forced past (TestNomadRegisterForcedPastAnOwedNodeExpansionSaysSo
// is the owed node step's). Found by helper review76.
func TestTakeBackOfAVolumeHandedOverWithItsExpansionPendingDoesNotBlameNomad(t *testing.T) {
	t.Parallel()
	h := expansionPendingThroughAPluginThatCannotList(t)
	h.faults.Clear()
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	if evs := h.eventsOf("nomad-handover", "v", "ControllerExpandVolume to 4MiB pending"); len(evs) == 0 {
		t.Errorf("the forced handover's event does not say the expansion to 4MiB pending: %v", h.eventsOf("nomad-handover", "v", ""))
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ListVolumes = true })
	r, err := h.e.TakeBack(h.ctx, "v", func(HandoverInfo) (string, error) { return "deregistered", nil }, nil)
	if err != nil || r.SizeErr != nil {
		t.Fatalf("take-back: %v (size: %v)", err, r.SizeErr)
	}
	if !r.Size.Grown || !r.Size.ByOwnExpand || r.Size.Pending != 4*mib {
		t.Errorf("take-back's size check = %+v; want it grown, the growth possibly volctl's own expansion to 4MiB", r.Size)
	}
	evs := h.eventsOf("volume-expand", "v", "lists it")
	if len(evs) == 0 {
		t.Fatalf("no volume-expand event of the take-back's listing: %v", h.eventsOf("", "v", ""))
	}
	for _, ev := range evs {
		if strings.Contains(ev, "grown while handed over to Nomad") || !strings.Contains(ev, "pending when it was handed over") {
			t.Errorf("take-back's event %q: want it to name the expansion pending at the handover, not blame Nomad alone", ev)
		}
	}
}

// expansionPendingThroughAPluginThatCannotList is a harness whose volume v has an expansion to
// 4MiB pending: every answer to its ControllerExpandVolume lost, through a plugin that cannot
// say a volume's size (one that can is asked before the RPC is sent again, and its listing
// ends the expand: TestExpandRetryAfterALostAnswerAsksTheListingFirst).
func expansionPendingThroughAPluginThatCannotList(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume, c.Controller.ListVolumes = false, false })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand whose answers were all lost succeeded")
	}
	return h
}
