package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
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

// TestDetailTablesNarrowOnlyForAnErrorColumn: the claim detail's Bind Mounts table
// is the only place the TUI shows a claim's volume_mount destinations, and its last column is
// PROPAGATION (a word), not an error or a path. shrinkForLast narrows every other column so
// the last keeps its cells, so a destination of an ordinary alloc-ID path (62 cells) is cut at
// its END at 80 columns to keep "host-to-task" whole: two binds of one claim, .../data and
// .../logs, both read "/var/lib/nomad/alloc/5f3c…-0d2b4…", and neither destination is drawn
// anywhere. Before the change the destination was drawn whole and only PROPAGATION was cut.
// Only tables whose last column is an error are narrowed now. Found by helper review65 (own).
func TestDetailTablesNarrowOnlyForAnErrorColumn(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	base := "/var/lib/nomad/alloc/5f3c2a9e-7b1d-4e8a-9c6f-0d2b4a8e1f37/"
	c := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "published", CreatedAt: now,
		Binds: []engine.Bind{
			{Destination: base + "data", PropagationMode: "host-to-task"},
			{Destination: base + "logs", ReadOnly: true, PropagationMode: "host-to-task"},
		}}
	d := claimDetail(NewStyles(FixedRenderer(termenv.Ascii)), c, now, 80)
	for _, m := range c.Binds {
		if !strings.Contains(d, m.Destination) {
			t.Errorf("the claim detail at 80 columns does not show volume_mount destination %s whole:\n%s", m.Destination, d)
		}
	}
}

// TestCapabilitiesThatFitAreNotCutForTheirHeader: shrinkForLast sizes what the last
// column needs by its widest cell, the header's included. The Capabilities table's last header,
// ATTACHMENT MODE, is 15 cells where its values ("file-system", "block-device") are 11–12: at
// the 40 columns the dashboard allows, "  multi-node-single-writer  block-device" fits whole (40
// cells), and before the change was drawn whole (only the header cut). Now the access modes,
// the data, are cut ("multi-node-single-wr…") so that the header word keeps its cells.
// Found by helper review65 (own).
func TestCapabilitiesThatFitAreNotCutForTheirHeader(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	v := engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db"},
		Capabilities: []spec.Capability{
			{AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.BlockDevice},
			{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem},
		}}
	d := volumeDetail(NewStyles(FixedRenderer(termenv.Ascii)), v, now, 40)
	for _, c := range v.Capabilities {
		if !strings.Contains(d, string(c.AccessMode)) {
			t.Errorf("the volume detail at 40 columns cuts access mode %s, whose row fits whole in 40 cells:\n%s", c.AccessMode, d)
		}
	}
}
