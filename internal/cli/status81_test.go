package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestStatusSummaryVolumeRowCountsACoveredClaimUnsettled: `volctl status` looks at every
// published claim's target (ClaimsLooked) and, for a claim whose target another mount now
// covers, counts it "1 not at rest" and lists it under Claims; but the Volumes table on the same
// screen, from the recorded rows alone, says of that volume's CLAIMS only "1 write", with no
// "(1 unsettled)". The one screen contradicts itself, and disagrees with `volume status v
// --json` (unsettled_claims 1) and the dashboard, which both add the covered claims to the
// volume's count (Dashboard: coveredBy; volumeStored). Correct: the summary's volume row counts
// the covered claim among its unsettled ones, "1 write (1 unsettled)", as its claim section does.
// Found by helper review81 (status).
func TestStatusSummaryVolumeRowCountsACoveredClaimUnsettled(t *testing.T) {
	ctx := context.Background()
	e := coveredPublishedClaim(t)

	code, text, errOut := runOnOut(ctx, e, "status")
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	if !strings.Contains(text, "1 not at rest") {
		t.Fatalf("status with claim a1's target covered does not count it not at rest (the precondition):\n%s", text)
	}
	var row string
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "v" && strings.Contains(line, "single-node-writer") && !strings.Contains(line, "a1") {
			row = line
		}
	}
	if row == "" {
		t.Fatalf("status lists no row of volume v in its Volumes table:\n%s", text)
	}
	if !strings.Contains(row, "(1 unsettled)") {
		t.Errorf("status: volume v's row is %q, saying its claim is settled, while the same screen counts that claim not at rest (its target covered):\n%s\nwant the row to say \"1 write (1 unsettled)\", as volume status v --json and the dashboard count it", strings.TrimSpace(row), text)
	}
}

// TestVolumeStatusOfAnAttachmentItsPluginCannotUnpublishDoesNotPromiseReconcile: volume v,
// attached through plugin mem, has its claim released after mem restarted without
// PUBLISH_UNPUBLISH_VOLUME, so its attachment stays recorded with ControllerUnpublishVolume
// owed. `volctl volume status v` says "`volctl reconcile` sends it" (even naming the lost
// capability as a possible cause in the same sentence); followed, `volctl reconcile` sends
// nothing and fails (exit 1), saying the plugin must be started with that capability again, and
// the status goes on promising the reconcile. The engine has the words for this
// (engine.OwedUnpublishWay: "Nothing can send it now, as last fingerprinted: ...; start the
// plugin with that capability again, then run `volctl reconcile`"), which deregister uses.
// Correct: the Attached row says what sends the unpublish as the plugin now is: start the plugin
// with PUBLISH_UNPUBLISH_VOLUME again (or detach by the provider's tools and forget it), then
// reconcile.
// Found by helper review81 (status).
func TestVolumeStatusOfAnAttachmentItsPluginCannotUnpublishDoesNotPromiseReconcile(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	h, mem, socket, stop := claimedThroughARestartablePlugin(t)
	// The plugin restarts without PUBLISH_UNPUBLISH_VOLUME; the claim's release keeps the
	// attachment, owed.
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	if _, err := h.e.Release(ctx, "v", "a1"); err != nil {
		t.Fatalf("release: %v", err)
	}

	// The advice followed: reconcile cannot send it.
	code, out, errOut := runOnOut(ctx, h.e, "reconcile")
	after, err := h.e.Volume(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if code == ExitOK || after.AttachedTo == "" || len(after.Claims) != 0 || !strings.Contains(errOut, "start the plugin with that capability again") {
		t.Fatalf("premise: reconcile cannot send the owed ControllerUnpublishVolume and says the plugin must be started with the capability: exit %d, attached_to %q, claims %d\n%s%s",
			code, after.AttachedTo, len(after.Claims), out, errOut)
	}

	code, out, errOut = runOnOut(ctx, h.e, "volume", "status", "v")
	if code != ExitOK {
		t.Fatalf("volume status v: exit %d: %s", code, errOut)
	}
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Attached ") {
			row = line
		}
	}
	if row == "" {
		t.Fatalf("premise: volume status v shows the owed attachment:\n%s", out)
	}
	if !strings.Contains(row, "start the plugin with") {
		t.Errorf("volume status v, after the reconcile it advises failed to send the ControllerUnpublishVolume (plugin mem lacks PUBLISH_UNPUBLISH_VOLUME), says:\n%s\n"+
			"want it to say what sends it now, as reconcile does: start the plugin with that capability again, then reconcile", row)
	}
}
