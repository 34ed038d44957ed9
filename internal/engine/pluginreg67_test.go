package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegisterAgainForAnotherDriverIsNotUnchanged: a plugin ID registered again on its
// socket where another driver now answers (allowed while no volume uses it) was said to be
// "unchanged: registered with this declaration", its plugin-register event "registered again,
// unchanged": pluginChanges compared the declaration and the driver's version, never the
// driver's name (GetPluginInfo's), which is what pins a plugin's storage. It names the driver
// now. Found by helper review67.
func TestRegisterAgainForAnotherDriverIsNotUnchanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	// The same version string: another driver, not another build of this one.
	h.restartWith(func(c *csitest.MemConfig) { c.Name = "other.csi.volctl.test" })
	info, reg, err := h.e.RegisterPluginOutcome(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	if err != nil {
		t.Fatalf("register mem again with another driver on its socket (no volume uses it): %v", err)
	}
	if info.Provider != "other.csi.volctl.test" {
		t.Fatalf("registered as driver %q, want other.csi.volctl.test", info.Provider)
	}
	if reg.Outcome == Unchanged || len(reg.Changed) == 0 {
		t.Errorf("registration that replaced driver mem.csi.volctl.test by other.csi.volctl.test says %v, changed %q; want Updated naming the driver", reg.Outcome, reg.Changed)
	}
	if evs := h.eventsOf("plugin-register", "", ""); len(evs) > 0 && strings.Contains(evs[0], "unchanged") {
		t.Errorf("plugin-register event of the driver swap: %q", evs[0])
	}
}

// TestNodeHalfRegistrationIsNotACapabilityLoss: registering a monolith again by its node half
// alone, on the same socket (the same process, which still advertises every controller
// capability), was recorded as the plugin coming back with other capabilities: a
// plugin-capabilities event "came back with other capabilities; lost: CREATE_DELETE_VOLUME,
// PUBLISH_UNPUBLISH_VOLUME, ..." and a CapabilityChange kept on its record, which `plugin
// status` showed for good, as the release worded this very case before controllerHalfGone.
// A half not fingerprinted now is not compared. Found by helper review67.
func TestNodeHalfRegistrationIsNotACapabilityLoss(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: h.socket}); err != nil {
		t.Fatalf("register mem again as its node half: %v", err)
	}
	noCapabilityChange(t, h, "a registration of the node half of a plugin that did not restart")
}

// TestNowServedByAdviceWorks: the refusal of a plugin socket now served by another driver
// advised, "if the driver changed on purpose, deregister the plugin and register it anew".
// While volumes use the plugin (the only time a volume RPC is refused so) neither worked:
// `plugin deregister` is refused ("used by 1 volume(s)"), and after `--force` the registration
// of the other driver is refused too (checkReregistration), leaving the volumes with no plugin
// at all. Its advice is followed here as written. Found by helper review67.
func TestNowServedByAdviceWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.restartWith(func(c *csitest.MemConfig) { c.Name = "other.csi.volctl.test" })
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), "now served by") {
		t.Fatalf("claim through another driver on the socket: %v; want the refusal", err)
	}
	const advice = "`volctl volume deregister` each of them, then `volctl plugin register` it again"
	if !strings.Contains(err.Error(), advice) || !strings.Contains(err.Error(), `volumes that use plugin "mem"`) {
		t.Fatalf("the refusal: %v\nwant its advice for a driver changed on purpose: %s", err, advice)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Fatalf("the advice's `volctl volume deregister v`: %v", err)
	}
	info, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	if err != nil || info.Provider != "other.csi.volctl.test" {
		t.Errorf("the advice's `volctl plugin register` of mem again: %+v, %v", info, err)
	}
}
