package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestUnlistedRestoreReplayRefusalDoesNotAdviseWhatRefusesItAgain: a restore from a snapshot the
// plugin does not list (nor volctl record), through a plugin answering with no content source,
// killed after CreateVolume answered. The replay (the same create again) is refused and its
// volume left alone (csi.CreateVolumeRequest.UnlistedKept), but the refusal is wrapped as a
// kept intent whose advice reads "the create stays recorded for `volctl reconcile` or the same
// create": both send the same CreateVolume again, get the same answer, and are refused the same
// way for as long as the plugin lacks the snapshot (for good, once it is gone), so reconcile
// (the agent's every minute) reports the problem on every pass and the advised way never
// finishes it; nor does anything say how to keep the volume if it does hold the data. Correct:
// the refusal names only ways out that work (keep it: `volume deregister` then `volume register`
// of the plugin's volume; drop it: `volume delete`), and the keep way, followed, works.
// Found by helper review81 (ownd).
func TestUnlistedRestoreReplayRefusalDoesNotAdviseWhatRefusesItAgain(t *testing.T) {
	t.Parallel()
	h := newHarnessServing(t, csitest.WithInterceptor(ignoringContentSource()))
	sv := unlistedRestoreKilledAt(t, h, "rpc:CreateVolume")
	_, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatalf("precondition: the same create run again after the kill said created; want it refused (crash81)")
	}
	msg := err.Error()
	if strings.Contains(msg, "stays recorded for `volctl reconcile` or the same create") ||
		!strings.Contains(msg, "`volctl volume delete restored`") || !strings.Contains(msg, "`volctl volume deregister restored`") {
		t.Fatalf("the replay's refusal: %v\nwant only the ways that end it advised: volume delete to drop it, volume deregister then a registration to keep it", err)
	}
	// The keep way followed to the end: deregister, then register the plugin's volume by its ID.
	vols := h.mem.Volumes()
	if len(vols) != 1 {
		t.Fatalf("precondition: the plugin holds %d volumes, want the replay's one left alone", len(vols))
	}
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, sv.ID, false); err != nil {
		t.Fatalf("volume deregister %s, as advised: %v", sv.ID, err)
	}
	kept := volume("kept")
	kept.ExternalID = vols[0].ID
	if v, err := h.e.RegisterVolume(h.ctx, kept); err != nil || v.State != "ready" {
		t.Fatalf("registering the plugin's volume %q, as advised: %+v, %v", vols[0].ID, v, err)
	}
}
