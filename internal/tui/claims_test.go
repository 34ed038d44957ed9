package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// The claims view keeps the last error whole when the screen is short of room, and cuts the
// target path in the middle instead (its start and its end both say something); at 200
// columns nothing that fits is cut.
func TestClaimsViewKeepsTheError(t *testing.T) {
	const fullErr = "NodePublishVolume: Unavailable: connection refused"
	const target = "/var/lib/volctl/publish/db-0/pg-data/rw-block-device-single-node-writer"

	h := newHarness(t, fixture(), Options{})
	h.keys("2")
	for _, tt := range []struct {
		width int
		err   string // what of the error shows: all that is left once the others gave way
	}{
		{80, "NodePublishVolume: Una"},
		{100, "NodePublishVolume: Unavailable: connection"},
		{140, fullErr},
	} {
		h.send(tea.WindowSizeMsg{Width: tt.width, Height: 30})
		line := lineWith(t, h.m.View(), "db-0")
		if !strings.Contains(line, tt.err) {
			t.Errorf("at %d columns the error is cut before the others gave way, want %q: %q", tt.width, tt.err, line)
		}
		if tt.width < 140 && !strings.Contains(line, "node-staged (ne…") {
			t.Errorf("at %d columns the state did not give way to the error: %q", tt.width, line)
		}
		if tt.width == 140 && (!strings.Contains(line, "/var/lib") || !strings.Contains(line, "…de-writer")) {
			t.Errorf("at %d columns the target is not cut in the middle: %q", tt.width, line)
		}
	}

	h.send(tea.WindowSizeMsg{Width: 200, Height: 50})
	line := lineWith(t, h.m.View(), "db-0")
	if !strings.Contains(line, fullErr) || !strings.Contains(line, target) {
		t.Errorf("at 200 columns the row lacks its whole target or error: %q", line)
	}
}

func lineWith(t *testing.T, screen, s string) string {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q:\n%s", s, screen)
	return ""
}

// With long volume and alloc names (a Nomad alloc name, a descriptive volume ID), the volume
// and alloc columns give way before the last error does: they only identify the row, which the
// detail shows whole, while the error is why the row is there. Before, the error was the widest
// column and was cut first, to 15 cells at 80 columns, beside a volume and an alloc of 14.
func TestClaimsViewErrorOutlastsLongNames(t *testing.T) {
	const vol = "logs-with-a-rather-long-volume-name"
	const alloc = "batch-job-with-long-alloc-name-0"
	const lastErr = `plugin "hp2": socket /run/volctl/hp2.sock does not exist (is the plugin running?)`
	f := fixture()
	f.data.Claims = append(f.data.Claims, engine.ClaimInfo{ID: 9, VolumeID: vol, Alloc: alloc, Mode: "write",
		AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem, State: "unpublishing", Releasing: true,
		NeedsReconcile: true, TargetPath: "/var/lib/volctl/publish/" + alloc + "/" + vol + "/rw-file-system-single-node-writer",
		LastError: lastErr, CreatedAt: ago(time.Minute), UpdatedAt: ago(time.Minute)})
	h := newHarness(t, f, Options{})
	h.keys("2")
	for _, tt := range []struct {
		width int
		err   string // at least this much of the error shows
	}{
		{80, `plugin "hp2": socket`},
		{100, `plugin "hp2": socket /run/volctl/hp2.sock`},
	} {
		h.send(tea.WindowSizeMsg{Width: tt.width, Height: 30})
		line := lineWith(t, h.m.View(), "batch")
		if !strings.Contains(line, tt.err) {
			t.Errorf("at %d columns the error is cut while the volume and alloc names keep their length, want %q: %q", tt.width, tt.err, line)
		}
	}
	h.send(tea.WindowSizeMsg{Width: 200, Height: 50})
	if line := lineWith(t, h.m.View(), "batch"); !strings.Contains(line, lastErr) {
		t.Errorf("at 200 columns the row lacks its whole error: %q", line)
	}
}
