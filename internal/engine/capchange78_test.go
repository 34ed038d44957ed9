package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestOwedUnpublishRefusalOfAPluginThatLostItsControllerServiceDoesNotPromiseReconcile: a
// plugin restarted without CONTROLLER_SERVICE (node-only now) while a volume is attached
// through it. The release keeps the attachment recorded, owed, and reconcile says the
// unpublish cannot be sent (the plugin answers, with no controller service). `volume
// deregister` and `plugin deregister --force` then refuse, as they should, but their advice
// is "Run `volctl reconcile` once plugin "mem" answers (it sends it)": the plugin answers
// already, and reconcile (just run) sends nothing. owedUnpublishWay reads the recorded
// fingerprint's PUBLISH_UNPUBLISH_VOLUME only when its controller service was fingerprinted
// (fp.Controller), so a plugin that lost the whole service falls through to the reconcile
// promise. Correct: the refusal says, as the release's event does, to start the plugin with
// its controller service (and the capability) again. Found by helper review78 (capchange).
func TestOwedUnpublishRefusalOfAPluginThatLostItsControllerServiceDoesNotPromiseReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.ControllerService = false })
	h.release("v", "a")
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("premise: staging after the release = %+v (kept %v); want the attachment kept, owed", st, ok)
	}
	h.mem.ResetCalls()
	rep, rerr := h.e.Reconcile(h.ctx)
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Fatalf("premise: reconcile sent ControllerUnpublishVolume %d times to a plugin without its controller service", n)
	}
	cannot := false
	for _, pr := range rep.Problems {
		if pr.VolumeID == "v" && strings.Contains(pr.Message, "CONTROLLER_SERVICE") {
			cannot = true
		}
	}
	if !cannot {
		t.Fatalf("premise: reconcile: %v %+v; want it to say the unpublish cannot be sent, naming CONTROLLER_SERVICE", rerr, rep.Problems)
	}

	perr := h.e.DeregisterPlugin(h.ctx, "mem", true)
	_, verr := h.e.DeregisterVolume(h.ctx, "v", false)
	for what, err := range map[string]error{"plugin deregister --force": perr, "volume deregister": verr} {
		if err == nil {
			t.Errorf("%s with an owed unpublish: done, want a refusal", what)
			continue
		}
		if strings.Contains(err.Error(), `once plugin "mem" answers (it sends it)`) || !strings.Contains(err.Error(), "CONTROLLER_SERVICE") {
			t.Errorf("%s refusal:\n%v\nit promises that reconcile sends the unpublish once the plugin answers; the plugin answers, without its controller service, "+
				"and reconcile (just run) sent nothing: want it to say to start the plugin with CONTROLLER_SERVICE (and PUBLISH_UNPUBLISH_VOLUME) again", what, err)
		}
	}
	// The advice followed: the plugin started with its controller service again, reconcile
	// sends the unpublish, and the volume deregisters.
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.ControllerService = true })
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the controller service back: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Fatalf("reconcile with the controller service back sent ControllerUnpublishVolume %d times, want 1", n)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Fatalf("volume deregister once the unpublish was sent: %v", err)
	}
}

// TestOwedUnpublishRefusalThroughANodeHalfRegistrationNamesTheControllerHalf: a monolith
// registered again by its node half alone while a volume is attached through it. The release
// keeps the attachment owed, and reconcile says the controller half is not registered. `volume
// deregister` then refuses with "Run `volctl reconcile` once plugin "mem" answers (it sends
// it)": plugin mem answers (its node half), and reconcile sends nothing until the controller
// half is registered. owedUnpublishWay decides from the recorded fingerprint, which has no
// controller service fingerprinted for a node-half registration, and falls through to the
// reconcile promise. Correct: the refusal names the controller half's registration, as the
// release's attachment-kept event and reconcile's problem do (controllerHalfGone). Found by helper
// review78 (capchange).
func TestOwedUnpublishRefusalThroughANodeHalfRegistrationNamesTheControllerHalf(t *testing.T) {
	t.Parallel()
	h := claimedThenRegisteredAs(t, spec.PluginNode)
	h.release("v", "a")
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("premise: staging after the release = %+v (kept %v); want the attachment kept, owed", st, ok)
	}
	h.mem.ResetCalls()
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("premise: reconcile with an attachment owed reported no problem")
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Fatalf("premise: reconcile sent ControllerUnpublishVolume %d times without the controller half", n)
	}
	_, err := h.e.DeregisterVolume(h.ctx, "v", false)
	if err == nil {
		t.Fatal("volume deregister with an owed unpublish: done, want a refusal")
	}
	if strings.Contains(err.Error(), `once plugin "mem" answers (it sends it)`) || !strings.Contains(err.Error(), "controller half") {
		t.Errorf("volume deregister refusal:\n%v\nit promises that reconcile sends the unpublish once plugin mem answers; it answers (its node half), "+
			"and reconcile (just run) sent nothing: want it to name the controller half's registration", err)
	}
	// The advice followed: the plugin registered as a monolith again (its controller half),
	// reconcile sends the unpublish, and the volume deregisters.
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		t.Fatalf("register plugin mem's controller half again: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the controller half registered: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Fatalf("reconcile with the controller half registered sent ControllerUnpublishVolume %d times, want 1", n)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Fatalf("volume deregister once the unpublish was sent: %v", err)
	}
}
