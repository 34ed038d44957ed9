package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPluginStatusShowsTheLastCapabilityChange: a plugin restarted without STAGE_UNSTAGE_VOLUME
// and PUBLISH_UNPUBLISH_VOLUME. `plugin status` (PluginStatus) showed the capabilities it has
// now and nothing of what it had: old → new was only in `volctl events --kind
// plugin-capabilities`. Its CapabilityChange says what it lost and gained, read from that
// event. The honest case: a plugin that never changed has none, and a later restart with
// the same capabilities keeps the last change's.
func TestPluginStatusShowsTheLastCapabilityChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if ch := h.capabilityChange(); ch != nil {
		t.Fatalf("a plugin that never changed: %+v; want no change", ch)
	}
	h.restartPlugin(func(cfg *csitest.MemConfig) {
		cfg.Node.StageUnstageVolume = false
		cfg.Controller.PublishUnpublishVolume = false
	})
	ch := h.capabilityChange()
	if ch == nil || !slices.Equal(ch.Lost, []string{"PUBLISH_UNPUBLISH_VOLUME", "STAGE_UNSTAGE_VOLUME"}) || len(ch.Gained) != 0 || ch.Gained == nil || ch.At.IsZero() {
		t.Fatalf("after a restart without STAGE_UNSTAGE_VOLUME and PUBLISH_UNPUBLISH_VOLUME: %+v; want both lost, none gained ([] in JSON), and when", ch)
	}
	h.restartPlugin(func(cfg *csitest.MemConfig) {
		cfg.Node.StageUnstageVolume = false
		cfg.Controller.PublishUnpublishVolume = false
	})
	if again := h.capabilityChange(); again == nil || !slices.Equal(again.Lost, ch.Lost) || !again.At.Equal(ch.At) {
		t.Fatalf("after a restart with the same capabilities: %+v; want the last change, %+v", again, ch)
	}
	h.restartPlugin(func(cfg *csitest.MemConfig) {})
	if back := h.capabilityChange(); back == nil || len(back.Lost) != 0 || !slices.Equal(back.Gained, []string{"PUBLISH_UNPUBLISH_VOLUME", "STAGE_UNSTAGE_VOLUME"}) {
		t.Fatalf("after a restart with them back: %+v; want both gained", back)
	}
}

// capabilityChange is the last capability change `plugin status` shows for plugin mem.
func (h *harness) capabilityChange() *CapabilityChange {
	h.t.Helper()
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil || len(ps) != 1 {
		h.t.Fatalf("plugin status: %+v, %v", ps, err)
	}
	return ps[0].CapabilityChange
}
