package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyExpansionRefusedAfterATimedOutAttemptStaysOwed: a node-only plugin (node
// EXPAND_VOLUME, no controller EXPAND_VOLUME) is asked `volume expand v --size 2MiB`. Its first
// NodeExpandVolume grows the volume, but its backend's deadline runs out before it answers:
// DEADLINE_EXCEEDED, which volctl retries within the command. The retry is answered
// OUT_OF_RANGE (the plugin refusing a size it now finds it has, or its quota counting the
// growth). finalRefusal looks only at the last attempt's code, so nodeOnlyRefused puts the
// record back at 1MiB with nothing owed and records "nothing grew", while the storage is 2MiB:
// the record says less than the storage holds, and nothing (neither reconcile nor an expand
// again) is left to learn it. finalRefusal's own words say a timeout "may have grown it, and
// stays owed", and the controller's path keeps an expansion pending when an earlier attempt
// may have done it (sendControllerExpand's earlier: "a refusal of one sent again says nothing
// of the attempt whose answer was lost").
//
// Correct behaviour: a final refusal counts as "nothing grew" only when no earlier attempt of
// the same NodeExpandVolume may have acted (a timeout, an answer lost, an UNAVAILABLE mid-call);
// otherwise the volume stays recorded at the size asked with its node expansion owed, and the
// error does not say nothing grew.
// Found by helper review82 (timeouts).
func TestNodeOnlyExpansionRefusedAfterATimedOutAttemptStaysOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})

	// The first attempt does the work, its answer the plugin's own DEADLINE_EXCEEDED; the
	// retry is refused.
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Lost: true, Code: codes.DeadlineExceeded, Times: 1})
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.OutOfRange, Times: 1})

	_, err := h.e.ExpandVolume(h.ctx, "v", 2*mib, 0)
	if err == nil {
		t.Fatalf("premise: the expand succeeded though its retry was refused")
	}
	if n := h.faults.Calls(csi.RPCNodeExpandVolume); n != 2 {
		t.Fatalf("premise: NodeExpandVolume sent %d times, want 2 (the timed-out attempt and its retry); error: %v", n, err)
	}
	pv, _ := h.mem.Volume(ext)
	if pv.CapacityBytes != 2*mib {
		t.Fatalf("premise: the first attempt did not grow the storage (it is %s)", spec.FormatSize(pv.CapacityBytes))
	}
	v := h.volumeInfo("v")
	if v.CapacityBytes < pv.CapacityBytes && v.NodeExpansionOwed == 0 {
		t.Errorf("after a NodeExpandVolume that timed out (DEADLINE_EXCEEDED, the storage grown to %s) and a retry refused OUT_OF_RANGE: "+
			"volume v is recorded at %s with no node expansion owed, as if nothing grew; want it kept owed at %s (the timed-out attempt may have grown it); error: %v",
			spec.FormatSize(pv.CapacityBytes), spec.FormatSize(v.CapacityBytes), spec.FormatSize(2*mib), err)
	}
}

// TestNodeOnlyExpansionRefusedForGoodDoesNotSayItStaysOwed: a node-only plugin (2MiB at most)
// refuses `volume expand v --size 4MiB` for good (NodeExpandVolume OUT_OF_RANGE at every
// target). nodeOnlyRefused puts the record back (1MiB, nothing owed) and says "nothing grew",
// but the error goes on with sendNodeExpand's words for a failure that is kept owed: "(it stays
// owed: run `volctl volume expand v --size 4MiB` again or `volctl reconcile`)". Neither holds:
// nothing is owed, so reconcile has nothing to send, and the expand again is refused the same
// way for good: advice that goes round in circles, contradicting the line before it.
//
// Correct behaviour: the refusal for good says the volume stays at its size with nothing owed,
// and names no command that only meets the same refusal (at most an expand to a size the
// plugin takes).
// Found by helper review82 (timeouts; the capchange review found it too).
func TestNodeOnlyExpansionRefusedForGoodDoesNotSayItStaysOwed(t *testing.T) {
	t.Parallel()
	h, _ := nodeOnlyCapped(t)

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil {
		t.Fatalf("premise: the node-only expand to 4MiB, above the plugin's 2MiB maximum, succeeded")
	}
	v := h.volumeInfo("v")
	if v.NodeExpansionOwed != 0 || v.CapacityBytes != mib {
		t.Fatalf("premise: the refused expansion was not put back (recorded at %s, owed %s)", spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed))
	}
	msg := err.Error()
	for _, lie := range []string{"stays owed", "volctl reconcile", "expand v --size 4MiB` again"} {
		if strings.Contains(msg, lie) {
			t.Errorf("the refusal for good, with nothing owed (volume v recorded at %s, node expansion owed %s), says %q: "+
				"reconcile has nothing to send and the same expand is refused again; error: %v",
				spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed), lie, err)
		}
	}
}

// TestNodeOnlyExpansionRefusedForGoodAfterATimedOutOneIsNotRecordedAtTheSizeRefused: a
// node-only plugin (node EXPAND_VOLUME alone, 2MiB at most). `volume expand v --size 2MiB` meets
// a NodeExpandVolume that hangs past the plugin's timeout: kept owed at 2MiB, rightly (the
// plugin may still be working). The user then asks `volume expand v --size 4MiB`; the plugin
// refuses it for good (OUT_OF_RANGE), nothing grown. nodeOnlyRefused, which puts a refused
// node-only expansion's record back, is skipped whenever a debt was owed before (!owedBefore in
// expandLocked), so the refused size is kept: v is recorded at 4MiB with 4MiB owed, the 2MiB
// debt written over, the storage still 1MiB. Every reconcile meets the same refusal, the
// advised "run `volctl volume expand v --size 4MiB` again" too, and the expand that would pay
// the earlier debt, `--size 2MiB`, is refused "volumes cannot shrink: v is 4MiB": no way out.
//
// Correct behaviour: a node-only expansion refused for good at every target puts the record
// back as it was before this expand, an earlier debt included (2MiB owed), so reconcile or an
// expand to 2MiB sends it and grows the storage.
// Found by helper review82 (timeouts).
func TestNodeOnlyExpansionRefusedForGoodAfterATimedOutOneIsNotRecordedAtTheSizeRefused(t *testing.T) {
	// Serial: the hung NodeExpandVolume's timeout (hungTimeout) bounds the dial too.
	h, ext := nodeOnlyCapped(t)
	h.open(hungConfig())

	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Hang: true, Times: 1})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 2*mib, 0); err == nil || !csi.IsTimeout(err) {
		t.Fatalf("premise: the expand whose NodeExpandVolume hangs did not time out: %v", err)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 2*mib {
		t.Fatalf("premise: the timed-out node expansion is not kept owed at 2MiB (owed %s)", spec.FormatSize(v.NodeExpansionOwed))
	}

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil || csi.CodeOf(err) != codes.OutOfRange {
		t.Fatalf("premise: the expand to 4MiB, above the plugin's 2MiB maximum, was not refused OUT_OF_RANGE: %v", err)
	}
	pv, _ := h.mem.Volume(ext)
	v := h.volumeInfo("v")
	if v.CapacityBytes > 2*mib || v.NodeExpansionOwed > 2*mib {
		t.Errorf("after the plugin refused the node-only expansion to 4MiB for good (storage %s): volume v is recorded at %s with %s owed, "+
			"a size the plugin refuses for good, the 2MiB debt of the timed-out expand written over; error: %v",
			spec.FormatSize(pv.CapacityBytes), spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.NodeExpansionOwed), err)
	}

	// The way out: the earlier size, which the plugin takes.
	_, err2 := h.e.ExpandVolume(h.ctx, "v", 2*mib, 0)
	pv, _ = h.mem.Volume(ext)
	if err2 != nil || pv.CapacityBytes < 2*mib {
		t.Errorf("then `volume expand v --size 2MiB`, the timed-out expand's size, which the plugin takes: %v; the storage is %s: want it sent and grown to 2MiB",
			err2, spec.FormatSize(pv.CapacityBytes))
	}
}
