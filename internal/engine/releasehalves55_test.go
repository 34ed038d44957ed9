package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// claimedThenRegisteredAs claims volume "v" through monolith "mem" (attached, staged,
// published), then registers "mem" again on the same socket as one half, typ: as its node half
// (spec.PluginNode) the driver still advertises CONTROLLER_SERVICE and PUBLISH_UNPUBLISH_VOLUME,
// only no controller half is registered to send ControllerUnpublishVolume through; as a
// controller plugin, no node service is registered on this host.
func claimedThenRegisteredAs(t *testing.T, typ spec.PluginType) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if typ == spec.PluginController {
		// A registration dropping the node service is refused under mounts since round 79
		// (TestRegisterAgainWithoutTheNodeServiceUnderMountsIsNotSilent): the state is reached
		// the way that remains, a forced deregister first (or an older volctl's registration).
		if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
			t.Fatalf("deregister plugin mem --force: %v", err)
		}
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: typ, Socket: h.socket}); err != nil {
		t.Fatalf("register plugin mem again as %s: %v", typ, err)
	}
	return h
}

// TestReleaseWithoutTheControllerHalfNamesTheMissingHalf: a release (and reconcile after it)
// through a plugin whose controller half is not registered said the plugin "no longer has the
// controller capability PUBLISH_UNPUBLISH_VOLUME" and to "start the plugin with that capability
// again": the plugin has it; what is missing is the controller half's registration, as every
// other controller path says (controllerHalfMissing). The attachment stays owed, and the
// release's event is attachment-kept, not capability-lost.
func TestReleaseWithoutTheControllerHalfNamesTheMissingHalf(t *testing.T) {
	t.Parallel()
	h := claimedThenRegisteredAs(t, spec.PluginNode)
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := h.mem.PublishedNodes(h.externalID("v")); len(got) != 1 {
		t.Fatalf("plugin's attachments after the release: %v; want node-1's, never unpublished", got)
	}
	_, err := h.e.Reconcile(h.ctx)
	if err == nil {
		t.Fatal("reconcile with an attachment owed: no problem reported")
	}
	msg := reconcileProblem(h, "").Error()
	if strings.Contains(msg, "no longer has the controller capability PUBLISH_UNPUBLISH_VOLUME") || !strings.Contains(msg, "controller half") {
		t.Errorf("reconcile's problem: %s\nwant it to name the unregistered controller half, not a capability the plugin still advertises", msg)
	}
	if lost, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "capability-lost", VolumeID: "v"}); err != nil || len(lost) != 0 {
		t.Errorf("capability-lost events = %+v, %v; want none", lost, err)
	}
	if kept, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "attachment-kept", VolumeID: "v"}); err != nil || len(kept) != 1 {
		t.Errorf("attachment-kept events = %+v, %v; want the release's", kept, err)
	}
	// The controller half registered again (the monolith as it was): reconcile detaches.
	h.registerPlugin("mem", h.socket)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile with the controller half back: %v", err)
	}
	if got := h.mem.PublishedNodes(h.externalID("v")); len(got) != 0 {
		t.Errorf("attachments once reconciled with the controller half back: %v; want none", got)
	}
}

// TestForcedDetachWithoutTheControllerHalfKeepsTheAttachmentOwed: a forced detach through a
// plugin whose controller half is not registered dropped the attachment record as for a
// capability lost ("the record is dropped"): the volume stayed attached to node-1 with nothing
// recorded to unpublish it, though the plugin, its controller half registered again, takes
// ControllerUnpublishVolume. The record stays, owed, the warning says so, and reconcile sends
// it once the controller half is back.
func TestForcedDetachWithoutTheControllerHalfKeepsTheAttachmentOwed(t *testing.T) {
	t.Parallel()
	h := claimedThenRegisteredAs(t, spec.PluginNode)
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "only its node half is registered") || !strings.Contains(w, "stays recorded, owed") {
		t.Errorf("the forced detach's warnings: %q; want them to name the missing controller half and the attachment kept", res.Warnings)
	}
	// The controller half registered again (the monolith as it was): reconcile should detach.
	h.registerPlugin("mem", h.socket)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	if got := h.mem.PublishedNodes(h.externalID("v")); len(got) != 0 {
		st, ok := h.staging("v")
		t.Fatalf("volume still attached to %v after a forced detach and a reconcile with the controller half back (ControllerUnpublishVolume sent %d times; staging row %+v, %v); "+
			"the forced detach said: %q", got, h.mem.CallCount(csi.RPCControllerUnpublishVolume), st, ok, res.Warnings)
	}
}

// TestReleaseThroughAControllerOnlyRegistrationIsLeftForReconcile: a release through a plugin
// registered again as a controller plugin (no node service on this host) failed as ErrInvalid
// (exit 2, "can never succeed as asked") with a claim's refusal ("cannot be published here;
// ... to claim it"), saying nothing of the claim left releasing, its mounts in place. It is a
// runtime error naming the node service to register and `volctl reconcile`, and the release
// finishes once the node service is registered again.
func TestReleaseThroughAControllerOnlyRegistrationIsLeftForReconcile(t *testing.T) {
	t.Parallel()
	h := claimedThenRegisteredAs(t, spec.PluginController)
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil {
		t.Fatal("release without a node service succeeded")
	}
	if errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "to claim it") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("release through a controller-only registration = %v (invalid=%v)\nwant a runtime error saying the claim is left releasing for `volctl reconcile`, not a claim's refusal", err, errors.Is(err, ErrInvalid))
	}
	h.registerPlugin("mem", h.socket) // the node service back: the release finishes
	h.release("v", "a")
}
