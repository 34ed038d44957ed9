package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestControllerServiceDroppedStillNamesTheAttachedVolumes: a monolith, registered
// with its controller, restarts without CONTROLLER_SERVICE while volume v is attached
// through it. Its controller half is still declared (the socket serves both): it truly lost
// every controller capability, PUBLISH_UNPUBLISH_VOLUME with it, and v can no longer be
// detached through it. This round's first fix for a node-half registration skipped the
// controller half whenever the new fingerprint had none, which is also what a plugin that
// dropped CONTROLLER_SERVICE gives: the event said only "lost: CONTROLLER_SERVICE", named no
// attached volume, and the plugin's record kept no PUBLISH_UNPUBLISH_VOLUME loss. The
// declaration decides now. Found by helper review67's own review.
func TestControllerServiceDroppedStillNamesTheAttachedVolumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if st, _ := h.staging("v"); !st.ControllerPublished {
		t.Fatalf("v not attached before the restart: %+v", st)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.ControllerService = false })
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Logf("plugin status: %v", err)
	}
	evs := h.eventsOf("plugin-capabilities", "", "")
	if len(evs) == 0 {
		t.Fatal("no plugin-capabilities event for a plugin that came back without CONTROLLER_SERVICE")
	}
	ev := evs[len(evs)-1]
	if !strings.Contains(ev, "PUBLISH_UNPUBLISH_VOLUME") || !strings.Contains(ev, `"v"`) {
		t.Errorf("plugin-capabilities event of a plugin that dropped CONTROLLER_SERVICE with v attached through it:\n  %s\n"+
			"want it to name the lost PUBLISH_UNPUBLISH_VOLUME and volume \"v\", which cannot be detached through it now", ev)
	}
	infos, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if ch := infos[0].CapabilityChange; ch == nil || !slices.Contains(ch.Lost, "PUBLISH_UNPUBLISH_VOLUME") {
		t.Errorf("plugin status' capability change = %+v; want PUBLISH_UNPUBLISH_VOLUME among the lost", ch)
	}
}

// TestMonolithDeclaredAgainAfterItsNodeHalfIsNoCapabilityGain: the way back from
// TestNodeHalfRegistrationIsNotACapabilityLoss. A monolith registered again by its node half
// alone, then again as the monolith it is, on the same socket, the process never restarted:
// its controller half was not fingerprinted by the node-half registration, so its capabilities
// were never compared then, and the registration back compared the record's none with the
// process's own and said the plugin "came back with other capabilities; gained: ...", kept on
// its record for plugin status. A half the record was taken without is not compared now
// (tookController). Found by helper review67's own review.
func TestMonolithDeclaredAgainAfterItsNodeHalfIsNoCapabilityGain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: h.socket}); err != nil {
		t.Fatalf("register mem again as its node half: %v", err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		t.Fatalf("register mem again as the monolith: %v", err)
	}
	noCapabilityChange(t, h, "registrations of one plugin process as its node half, then as the monolith,")
}

// noCapabilityChange fails the test when plugin mem of h has a capability change recorded,
// in its events or on its record (plugin status), after what.
func noCapabilityChange(t *testing.T, h *harness, what string) {
	t.Helper()
	for _, ev := range h.eventsOf("plugin-capabilities", "", "") {
		if strings.Contains(ev, "came back with other capabilities") {
			t.Errorf("%s recorded: %q", what, ev)
		}
	}
	infos, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if ch := infos[0].CapabilityChange; ch != nil {
		t.Errorf("after %s, plugin status says plugin mem's capabilities changed: %+v; the process never restarted", what, ch)
	}
}
