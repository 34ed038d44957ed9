package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestCapabilityChangeIsNotReadFromThePluginsWords: the last capability change `plugin status`
// shows is read back from the plugin-capabilities event's message, which also quotes what the
// plugin said (its vendor_version, its node ID). A plugin that came back with the same
// capabilities and a vendor_version of "2.0; lost: STAGE_UNSTAGE_VOLUME" was shown as having
// lost STAGE_UNSTAGE_VOLUME (`STAGE_UNSTAGE_VOLUME", was "1.0.0"`, in --json's
// capability_change too) when it lost nothing. Only the event's own lists are read; the
// honest change after it is still shown.
func TestCapabilityChangeIsNotReadFromThePluginsWords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Version = "2.0; lost: STAGE_UNSTAGE_VOLUME; gained: MAGIC" })
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Version = "3.0"; cfg.NodeID = "node-1; gained: MAGIC" })
	if ch := h.capabilityChange(); ch != nil {
		t.Fatalf("a plugin that came back with the same capabilities and another vendor_version and node ID saying they changed: %+v; want no change", ch)
	}
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Version = "4.0; gained: MAGIC"; cfg.Node.StageUnstageVolume = false })
	if ch := h.capabilityChange(); ch == nil || !slices.Equal(ch.Lost, []string{"STAGE_UNSTAGE_VOLUME"}) || len(ch.Gained) != 0 || ch.Gained == nil {
		t.Fatalf("after a restart without STAGE_UNSTAGE_VOLUME, its vendor_version saying it gained MAGIC: %+v; want STAGE_UNSTAGE_VOLUME lost and nothing gained", ch)
	}
}
