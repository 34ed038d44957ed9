package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
)

// TestDashboardReconcileCutShortAfterAProblemSaysSo: the dashboard's reconcile action (R) whose
// pass is cut short (the dashboard quit, a signal) after it found a problem said "reconciled:
// nothing to do; 1 problem left: ...", as of a pass that looked at everything: what the pass
// never got to went unsaid, as `volctl reconcile` did before round 79
// (TestReconcileInterruptedAfterAProblemSaysItWasInterrupted). Now it says the pass was
// interrupted, with the problems found before. Found by helper review79 (own).
func TestDashboardReconcileCutShortAfterAProblemSaysSo(t *testing.T) {
	f := &fakeEngine{
		reconciled:   engine.ReconcileReport{Problems: []engine.ReconcileAction{{Kind: "failed", VolumeID: "a", Message: `volume "a" (deleting): DeleteVolume: FailedPrecondition: in use`}}},
		reconcileCut: errors.New("reconcile: interrupted (SIGINT received); what it did is listed, 1 problem(s) found before that; run `volctl reconcile` again to finish"),
	}
	msg := action{kind: actReconcile}.perform(context.Background(), f)
	if msg.err == nil || !strings.Contains(msg.err.Error(), "interrupted") || !strings.Contains(msg.err.Error(), `volume "a"`) {
		t.Errorf("the dashboard's reconcile cut short after a problem: %v; want it to say the pass was interrupted, and the problem found before", msg.err)
	}

	// A pass that looked at everything says its problems alone.
	f = &fakeEngine{reconciled: engine.ReconcileReport{Problems: []engine.ReconcileAction{{Kind: "failed", VolumeID: "a", Message: `volume "a": in use`}}}}
	msg = action{kind: actReconcile}.perform(context.Background(), f)
	if msg.err == nil || strings.Contains(msg.err.Error(), "interrupted") || !strings.Contains(msg.err.Error(), "1 problem left") {
		t.Errorf("the dashboard's reconcile of a whole pass with a problem: %v; want the problem left, no word of an interruption", msg.err)
	}
}

// TestGroupDetailOfAPastAllocWhoseReleaseFailedSaysWhy: the dashboard's group detail of an
// alloc past the group's count whose claim's release failed (its target covered: the umount
// first) said "no longer the group's: its claims are left for `volctl reconcile` to release",
// where reconcile fails the same way until the cover is gone; `group status` now says the
// release's error, and so does the dashboard. Found by helper review79 (own).
func TestGroupDetailOfAPastAllocWhoseReleaseFailedSaysWhy(t *testing.T) {
	s := NewStyles(FixedRenderer(termenv.Ascii))
	failed := []engine.ClaimInfo{{ID: 1, VolumeID: "v[1]", Alloc: "web[1]", Mode: "write", State: "unpublishing", Releasing: true,
		LastRPC: "NodeUnpublishVolume", LastError: "its target has 1 mount(s) stacked over the one NodePublishVolume made: unmount them (`umount /t`, once), then run `volctl reconcile`"}}
	g := engine.GroupInfo{Name: "web", State: "running", Count: 1, Allocs: []engine.AllocInfo{{Name: "web[1]", Index: 1, Claims: failed}}}
	out := groupDetail(s, g, 400)
	if !strings.Contains(out, "umount /t") || strings.Contains(out, "left for `volctl reconcile` to release") {
		t.Errorf("the group detail of a past alloc whose release failed at a cover:\n%s\nwant the release's error (the umount), not \"left for reconcile\"", out)
	}
}
