package tui

import (
	"strconv"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestNarrowScreensKeepWhatEachViewIsFor: from the smallest screen the dashboard draws (40
// columns) up, every view shows the column that names its rows and the one that says what is
// wrong with them, and no column runs off the right edge. Columns that did not fit were left
// past the edge, cut by the line's end: at 40 columns the volume list lost SCHEDULABLE and
// R/W (the one thing saying a volume takes no claims), the claims view its AGE and LAST ERROR,
// the plugin list its LATENCY, all behind a "…".
func TestNarrowScreensKeepWhatEachViewIsFor(t *testing.T) {
	views := []struct {
		tab  string
		want []string // titles that must show whole
		row  string   // a row that must show...
		cell string   // ...this much of its status
	}{
		{"1", []string{"ID", "SCHEDULABLE"}, "pg-data", "no: plugin"},
		{"2", []string{"VOLUME", "ALLOC", "STATE", "LAST ERROR"}, "db-0", "NodeP"},
		{"3", []string{"ID", "HEALTH"}, "ceph", "unhealthy"},
		{"4", []string{"AGE", "KIND", "MESSAGE"}, "plugin-", "plugin \"ceph\""},
		{"5", []string{"GROUP", "STATE", "LAST ERROR"}, "nightly", "nightly[0]"},
	}
	for width := minWidth; width <= 120; width++ {
		f := fixture()
		f.data.EventsLogged = 9812 // the events view holds the newest of them, which its status line says
		h := newHarness(t, f, Options{})
		h.send(tea.WindowSizeMsg{Width: width, Height: 24})
		for _, v := range views {
			h.keys(v.tab)
			screen := h.m.View()
			lines := strings.Split(screen, "\n")
			header := lines[1]
			for _, title := range v.want {
				if !hasWord(header, title) {
					t.Errorf("at %d columns view %s's header lacks %s whole: %q", width, v.tab, title, header)
				}
			}
			if strings.HasSuffix(strings.TrimRight(header, " "), "…") {
				t.Errorf("at %d columns view %s's header runs off the right edge: %q", width, v.tab, header)
			}
			if line := lineWith(t, screen, v.row); !strings.Contains(line, v.cell) {
				t.Errorf("at %d columns view %s's row %s lacks %q: %q", width, v.tab, v.row, v.cell, line)
			}
			if status := lines[len(lines)-2]; !strings.Contains(status, "1 of ") {
				t.Errorf("at %d columns view %s's status line lacks the row position: %q", width, v.tab, status)
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > width {
					t.Errorf("at %d columns view %s's line %d is %d cells wide", width, v.tab, i+1, w)
				}
			}
		}
	}
}

// hasWord reports whether title is in line as a whole title, not cut short.
func hasWord(line, title string) bool {
	for _, f := range strings.Split(line, "  ") {
		f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(f), "↑"), "↓"))
		if f == title {
			return true
		}
	}
	return false
}

// TestNarrowTabBarShowsTheActiveTab: the tab bar was cut at the screen's edge, so on 40
// columns the Events and Groups tabs, when active, were past it ("3 P…"): nothing said which
// view was showing, nor how many rows it had. The active tab shows whole at every width; the
// others shorten to their key first.
func TestNarrowTabBarShowsTheActiveTab(t *testing.T) {
	for width := minWidth; width <= 120; width++ {
		h := newHarness(t, fixture(), Options{ReadOnly: width%2 == 0})
		h.send(tea.WindowSizeMsg{Width: width, Height: 24})
		for i, v := range views {
			h.keys(string(rune('1' + i)))
			bar := strings.Split(h.m.View(), "\n")[0]
			shown, _ := h.m.tabs[i].count()
			want := "[" + string(rune('1'+i)) + " " + v.name + " " + strconv.Itoa(shown) + "]"
			if !strings.Contains(bar, want) {
				t.Errorf("at %d columns the tab bar lacks the active tab %s: %q", width, want, bar)
			}
			for k, o := range views { // every other tab's key is there to press, with its name's initial
				if k != i && !strings.Contains(bar, " "+string(rune('1'+k))+" "+o.name[:1]) {
					t.Errorf("at %d columns the tab bar lacks tab %d: %q", width, k+1, bar)
				}
			}
			if w := ansi.StringWidth(bar); w > width {
				t.Errorf("at %d columns the tab bar is %d cells wide", width, w)
			}
		}
	}
}

// TestSortKeyShowsItsColumnWhole: s moves the sort to the next column, whose title then takes
// the arrow; the columns were laid out for the old sort column's arrow only when the next rows
// came, so until then the new one's title was cut short ("CAPAC…" for "CAPACITY ↑") on a
// screen too narrow for every column's content. After each s the sort column's title shows
// whole with its arrow, and no line is wider than the screen.
func TestSortKeyShowsItsColumnWhole(t *testing.T) {
	for width := minWidth; width <= 120; width++ {
		h := newHarness(t, fixture(), Options{})
		h.send(tea.WindowSizeMsg{Width: width, Height: 24})
		for i := range views {
			h.keys(string(rune('1' + i)))
			tb := h.m.tabs[i]
			for range tb.cols {
				h.keys("s")
				title := tb.cols[tb.sortCol].title
				header := strings.Split(h.m.View(), "\n")[1]
				if !strings.Contains(header, title+" ↑") {
					t.Errorf("at %d columns view %d sorted by %s: its header lacks %q whole: %q", width, i+1, title, title+" ↑", header)
				}
				if w := ansi.StringWidth(header); w > width {
					t.Errorf("at %d columns view %d's header is %d cells wide", width, i+1, w)
				}
			}
		}
	}
}
