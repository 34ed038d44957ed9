package tui

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// TestDetailTablesKeepTheErrorColumnOnScreen: the detail's small tables (a group's
// allocs, a volume's claims) size every column but the last to its widest cell, unbounded, and
// wrap the last only while 20 cells are left for it. An alloc of a group holding two volumes of
// ordinary names, or a claim of an alloc named by a UUID, pushes the ERROR / LAST ERROR column
// past the edge at 80 columns, where the line's cut drops it whole: the run's error, the
// "left for volctl reconcile" of an alloc the group no longer has (which only the detail says),
// and a claim's error are drawn nowhere. The other columns are narrowed for it now
// (shrinkForLast). Found by helper review65.
func TestDetailTablesKeepTheErrorColumnOnScreen(t *testing.T) {
	f := fixture()
	held := func(alloc string, ids ...string) []engine.ClaimInfo {
		var cs []engine.ClaimInfo
		for i, v := range ids {
			cs = append(cs, engine.ClaimInfo{ID: int64(100 + i), VolumeID: v, Alloc: alloc, Mode: "write", State: "published", CreatedAt: ago(1)})
		}
		return cs
	}
	f.data.Groups = append(f.data.Groups,
		engine.GroupInfo{Name: "db", State: "running", Count: 1, Allocs: []engine.AllocInfo{
			{Name: "db[0]", Index: 0, Claims: held("db[0]", "postgres-primary-data", "postgres-wal-archive"),
				Missing: []string{"postgres-backups"}, Error: `claim "postgres-backups": CreateVolume: ResourceExhausted: pool full`}}},
		engine.GroupInfo{Name: "old", State: "stopped", Count: 1, Allocs: []engine.AllocInfo{
			{Name: "old[0]", Index: 0, Claims: held("old[0]", "reports-2025-archive", "reports-2026-archive")}}})
	f.data.Claims[4].Alloc = "5f3c2a9e-7b1d-4e8a-9c6f-0d2b4a8e1f37" // pg-data's claim, "connection refused"

	for _, c := range []struct {
		keys []string
		want string
	}{
		{[]string{"5", "/", "db", "enter", "enter"}, "pool full"},
		{[]string{"5", "/", "old", "enter", "enter"}, "no longer the"}, // wrapped under itself
		{[]string{"1", "/", "pg-data", "enter", "enter"}, "connection refused"},
	} {
		h := newHarness(t, f, Options{}) // 80x24
		h.keys(c.keys...)
		if out := h.m.View(); !strings.Contains(out, c.want) {
			t.Errorf("after %q at 80x24 the detail does not show %q:\n%s", c.keys, c.want, out)
		}
	}
}
