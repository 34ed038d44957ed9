package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
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
