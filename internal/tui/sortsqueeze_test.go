package tui

import (
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// review31c found: a sort s reaches must not cut the columns a view is for (its identity: the
// volumes' ID, the claims' VOLUME and ALLOC, ...) narrower than they are under the view's
// first sort: the header's title still fits ("VOLUME" in 6 cells), so
// TestSortKeyReachesEveryColumnShown passes, but every row's volume and alloc are cut to a
// stub and two claims read alike.
func TestSortNeverNarrowsTheViewsColumns(t *testing.T) {
	for width := minWidth; width <= 120; width++ {
		h := newHarness(t, fixture(), Options{})
		h.send(tea.WindowSizeMsg{Width: width, Height: 24})
		for i := range views {
			h.keys(string(rune('1' + i)))
			tb := h.m.tabs[i]
			base := map[string]int{}
			for k, c := range tb.cols {
				base[c.title] = tb.widths[k]
			}
			for range len(tb.cols) {
				h.keys("s")
				for k, c := range tb.cols {
					if !slices.Contains(viewIsFor[i], c.title) || k == tb.sortCol || tb.cols[tb.sortCol].drop == 0 {
						continue
					}
					// A column that may drop is kept by cutting a column the view is for
					// below its floor, and below what it has under the view's first sort.
					if tb.widths[k] < min(c.min, base[c.title]) {
						t.Errorf("at %d columns view %d sorted by %s cuts %s to %d cells (%d under the first sort): %q",
							width, i+1, tb.cols[tb.sortCol].title, c.title, tb.widths[k], base[c.title], strings.Split(h.m.View(), "\n")[2])
					}
				}
			}
		}
	}
}
