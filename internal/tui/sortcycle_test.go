package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// viewIsFor holds, per view, the columns the view is for: they show whole under every sort.
var viewIsFor = [][]string{{"ID", "SCHEDULABLE"}, {"VOLUME", "ALLOC", "STATE", "LAST ERROR"}, {"ID", "HEALTH"}, {"AGE", "KIND", "MESSAGE"}, {"GROUP", "STATE", "LAST ERROR"}}

// TestSortKeyReachesEveryColumnShown: s moves the sort to the next column on screen, so
// pressing it once per column visits every column the screen shows. At 42 columns the events'
// VOLUME was shown but never sorted by: s put the sort on it, its title took the arrow, the
// wider title no longer fitted, VOLUME was hidden, and the sort fell back to the first column
// (AGE): the user pressing s saw AGE again, and VOLUME could not be sorted by at that width.
//
// A column s reaches may be one the screen hid under the sort before (its arrow elsewhere), and
// others give way for it: never the columns the view is for, which show whole under every sort.
func TestSortKeyReachesEveryColumnShown(t *testing.T) {
	for width := minWidth; width <= 120; width++ {
		h := newHarness(t, fixture(), Options{})
		h.send(tea.WindowSizeMsg{Width: width, Height: 24})
		for i := range views {
			h.keys(string(rune('1' + i)))
			tb := h.m.tabs[i]
			header := strings.Split(h.m.View(), "\n")[1]
			var shown []string
			for k, c := range tb.cols {
				if tb.widths[k] > 0 && hasWord(header, c.title) {
					shown = append(shown, c.title)
				}
			}
			sorted := map[string]bool{}
			for range 2 * len(tb.cols) {
				h.keys("s")
				sorted[tb.cols[tb.sortCol].title] = true
				header := strings.Split(h.m.View(), "\n")[1]
				for _, title := range viewIsFor[i] {
					if !hasWord(header, title) {
						t.Errorf("at %d columns view %d sorted by %s lacks %s whole: %q", width, i+1, tb.cols[tb.sortCol].title, title, header)
					}
				}
			}
			for _, title := range shown {
				if !sorted[title] {
					t.Errorf("at %d columns view %d shows %s, but s never sorts by it (sorted by %v)", width, i+1, title, keysOf(sorted))
				}
			}
		}
	}
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
