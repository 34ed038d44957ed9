package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A claim waiting for the plugin's controller lock while the plugin restarts stating an
// accessible topology for the first time (an upgrade that reports its zone). The volume has no
// topology of its own: admission, against the new limits, admits it (checkNode), and the claim
// again the refusal advised was taken. Before, checkSockets' putsOnNode refusal counted any
// other topology as tightened (nodeLimitsTightened), so the claim was rolled back for nothing,
// as a raised max_volumes_per_node was before TestClaimIsNotRefusedForLimitsRaisedMeanwhile.
// Found by helper review64.
func TestClaimIsNotRefusedForATopologyThatStillAdmitsTheVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	done, unlock := claimWaitingForTheControllerLock(t, h)
	h.restartWith(func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	})
	unlock()
	if err := <-done; err != nil {
		t.Errorf("claim of a volume with no topology, its plugin restarted stating zone=a meanwhile = %v; want it published (admission admits it)", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Errorf("v's claims = %+v, want the claim", live)
	}
	// What the refusal advised: claim again. Admission takes it.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Errorf("the claim again: %v", err)
	}
}

// A monolith plugin restarted without its controller service (CONTROLLER_SERVICE gone, started
// node-only) while a volume is attached through it. The release keeps the attachment owed, as
// for a lost PUBLISH_UNPUBLISH_VOLUME; before, its words (the release's capability-lost event
// and every reconcile problem) said only that the plugin "no longer has the controller
// capability PUBLISH_UNPUBLISH_VOLUME" and to "start the plugin with that capability again":
// the controller service itself is what is gone, and a plugin started with the capability flag
// but still without its controller service is never sent the unpublish. Found by helper review64.
func TestAttachmentKeptByAPluginWithoutItsControllerServiceNamesTheService(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.ControllerService = false })
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("staging after the release = %+v (kept %v); want the attachment kept, owed", st, ok)
	}
	lost, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "capability-lost", VolumeID: "v"})
	if err != nil || len(lost) != 1 {
		t.Fatalf("capability-lost events = %+v, %v", lost, err)
	}
	if !strings.Contains(lost[0].Message, "CONTROLLER_SERVICE") {
		t.Errorf("the release's capability-lost event:\n  %s\nwant it to name CONTROLLER_SERVICE, the service the plugin lost (it still names only the capability)", lost[0].Message)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "CONTROLLER_SERVICE") {
		t.Errorf("reconcile's problems = %+v\nwant the owed attachment's problem to name CONTROLLER_SERVICE", rep.Problems)
	}
}
