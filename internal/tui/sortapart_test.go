package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// review31c found: on the claims view, s reaching MODE (a column that may drop) cuts VOLUME and
// ALLOC, the claim's identity, below their floor: two claims of one volume by render[0] and
// render[1] read alike ("share…  rend…"). Before, MODE dropped at this width and they stayed
// apart. Every width 40–120: the claims' rows, under every sort s reaches, keep the VOLUME
// and ALLOC cells of two claims apart when they differ.
func TestSortKeepsClaimsApart(t *testing.T) {
	for width := minWidth; width <= 120; width++ {
		h := newHarness(t, fixture(), Options{})
		h.send(tea.WindowSizeMsg{Width: width, Height: 40})
		h.keys("2")
		tb := h.m.tabs[1]
		apart := func() (string, bool) {
			lines := strings.Split(h.m.View(), "\n")
			seen := map[string]bool{}
			for _, line := range lines[2 : 2+len(tb.view)] {
				f := strings.Fields(strings.TrimPrefix(line, ">"))
				id := f[0] + " " + f[1]
				if seen[id] {
					return id, false
				}
				seen[id] = true
			}
			return "", true
		}
		if _, ok := apart(); !ok {
			continue // too narrow to tell them apart under the first sort too
		}
		for range len(tb.cols) {
			h.keys("s")
			if tb.cols[tb.sortCol].drop == 0 {
				continue
			}
			lines := strings.Split(h.m.View(), "\n")
			seen := map[string]string{}
			for _, line := range lines[2 : 2+len(tb.view)] {
				f := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(line, ">"), " "))
				if len(f) < 2 {
					continue
				}
				id := f[0] + " " + f[1]
				if prev, ok := seen[id]; ok {
					t.Errorf("at %d columns sorted by %s two claims read alike as %q:\n%s\n%s", width, tb.cols[tb.sortCol].title, id, prev, line)
				}
				seen[id] = line
			}
		}
	}
}
