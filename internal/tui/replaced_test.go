package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// TestStateReplacedUnderTheDashboard: a backup restored over volctl.db while the dashboard runs.
// The dashboard is a long-running reader, and SQLite goes on reading the file it opened, by
// inode: every refresh showed the old file's rows as "updated 12:00:00", fresh, while every
// command read the restored one. Now the refresh says the state was replaced and to restart,
// and the rows it has are no longer shown as fresh; the data stays on screen, marked.
func TestStateReplacedUnderTheDashboard(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := engine.Open(ctx, engine.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	db := filepath.Join(dir, store.FileName)
	backup, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	e.PluginEvent(ctx, "mem", "plugin-exited", "plugin \"mem\" exited: only in the file the backup replaces")

	h := newHarness(t, e, Options{})
	h.keys("4")
	if !strings.Contains(h.m.View(), "only in the file") || !strings.Contains(h.m.stateText(true), "updated") {
		t.Fatalf("before the restore, the events view does not show the event:\n%s", h.m.View())
	}

	storetest.Restore(t, dir, backup)
	h.send(refreshTickMsg{})
	out := h.m.View()
	state := h.m.stateText(true)
	if strings.Contains(state, "updated") || !strings.Contains(state, "replaced") {
		t.Errorf("after a backup was restored over %s, the dashboard says %q: want the state replaced, not its old file's rows shown as fresh\n%s", db, state, out)
	}
	if !strings.Contains(out, "The state database cannot be read") || h.m.failure == nil ||
		!strings.Contains(h.m.failure.err, db) || !strings.Contains(h.m.failure.err, "restart") {
		t.Errorf("the dashboard does not say, in a box, which file was replaced and to restart:\n%s", out)
	}
	// Closed, the box does not come back with every read that fails the same way.
	h.keys("enter")
	h.send(refreshTickMsg{})
	if h.m.failure != nil || !strings.Contains(h.m.stateText(true), "replaced") {
		t.Errorf("after the box was closed and another read: box %v, state %q", h.m.failure != nil, h.m.stateText(true))
	}
}
