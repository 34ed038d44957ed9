package engine

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestCapabilityChangeOutlivesTheEventLog: a plugin restarted without STAGE_UNSTAGE_VOLUME,
// then a busy host: a full event log (store.DefaultEventLimit) of claims and releases since,
// which drops the plugin-capabilities event (dropped here as the log drops it). `plugin
// status` read the last change from that event alone, so it said nothing of what the plugin
// lost once the log had moved on, while the plugin still lacked it. The change is kept in the
// plugin's record; a restart with the same capabilities keeps it, and one with them back
// replaces it.
func TestCapabilityChangeOutlivesTheEventLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false })
	first := h.capabilityChange()
	if first == nil || !slices.Equal(first.Lost, []string{"STAGE_UNSTAGE_VOLUME"}) {
		t.Fatalf("after a restart without STAGE_UNSTAGE_VOLUME: %+v", first)
	}
	// The log drops its oldest events once store.DefaultEventLimit follow them (a busy host's
	// claims and releases): the plugin-capabilities event goes as that drop takes it, without
	// appending ten thousand events (store's TestCapabilityChangeMigratesFromTheEventLog holds
	// the drop itself).
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`DELETE FROM events WHERE kind = 'plugin-capabilities'`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("drop the plugin-capabilities event: %d dropped, %v; want 1", n, err)
	}
	db.Close()
	ch := h.capabilityChange()
	if ch == nil || !slices.Equal(ch.Lost, []string{"STAGE_UNSTAGE_VOLUME"}) || len(ch.Gained) != 0 || ch.Gained == nil || !ch.At.Equal(first.At) {
		t.Fatalf("the plugin-capabilities event dropped from the log: capability change %+v; want %+v", ch, first)
	}
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false; cfg.Version = "9.9" })
	if again := h.capabilityChange(); again == nil || !again.At.Equal(first.At) || !slices.Equal(again.Lost, first.Lost) {
		t.Fatalf("after a restart with another version alone: %+v; want the last change, %+v", again, first)
	}
	h.restartPlugin(func(cfg *csitest.MemConfig) {})
	if back := h.capabilityChange(); back == nil || len(back.Lost) != 0 || !slices.Equal(back.Gained, []string{"STAGE_UNSTAGE_VOLUME"}) || back.Lost == nil {
		t.Fatalf("after a restart with it back: %+v; want it gained, nothing lost ([] in JSON)", back)
	}
}
