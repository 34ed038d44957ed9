package engine

import (
	"fmt"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin that lost STAGE_UNSTAGE_VOLUME, then restarted with another version alone more times
// than lastCapabilityChanges reads events of (capabilityEventsRead): its capability change
// must still be shown.
func TestCapabilityChangeOutlivesVersionOnlyRestarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false })
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	for i := range capabilityEventsRead + 1 {
		h.restartPlugin(func(cfg *csitest.MemConfig) {
			cfg.Node.StageUnstageVolume = false
			cfg.Version = fmt.Sprintf("1.0.%d", i+1)
		})
		if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if ch := ps[0].CapabilityChange; ch == nil || len(ch.Lost) != 1 {
		t.Errorf("after %d restarts with another version alone: capability change %+v; want STAGE_UNSTAGE_VOLUME lost", capabilityEventsRead+1, ch)
	}
}

// A plugin whose vendor_version reads as a capability change ("2; lost: ..."), restarted with
// that version alone: `plugin status` must not say it lost a capability it has.
func TestCapabilityChangeIsNotForgedByAVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Version = "2; lost: PUBLISH_UNPUBLISH_VOLUME; x" })
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if ch := ps[0].CapabilityChange; ch != nil {
		t.Errorf("a plugin restarted with another version alone, its version %q: capability change %+v; want none", "2; lost: PUBLISH_UNPUBLISH_VOLUME; x", ch)
	}
}
