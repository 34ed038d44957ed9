package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestWideCharactersKeepColumnsAligned: a cell cut to its column's width must fill it exactly,
// or every column right of it moves. A double-width character (CJK, most emoji) that straddles
// the cut cannot be half kept, and the cut leaves a cell short: the cell is padded to the width
// all the same, at both ends of the table (the volume list's ID, cut at the right; a claim's
// target, cut in the middle).
func TestWideCharactersKeepColumnsAligned(t *testing.T) {
	for _, tt := range []struct {
		s           string
		w           int
		right, left bool
	}{
		{"数据库数据库", 8, false, false},
		{"数据库数据库", 8, true, false},
		{"数据库数据库", 8, false, true},
		{"数据库-👩‍👩‍👧‍👦👩‍👩‍👧‍👦", 9, false, false},
	} {
		if got := fit(tt.s, tt.w, tt.right, tt.left); ansi.StringWidth(got) != tt.w {
			t.Errorf("fit(%q, %d, right %v, leftCut %v) = %q, %d cells wide", tt.s, tt.w, tt.right, tt.left, got, ansi.StringWidth(got))
		}
	}
	if got := midCut("/var/lib/数据库数据库/数据库数据库", 11); ansi.StringWidth(got) > 11 {
		t.Errorf("midCut = %q, %d cells wide", got, ansi.StringWidth(got))
	}

	// On screen: the volume list with a CJK ID cut in a narrow terminal.
	fake := fixture()
	fake.data.Volumes[0].ID = "数据库数据库数据库数据库"
	h := newHarness(t, fake, Options{})
	h.send(sizeMsg(41))
	var plugin []int // where each row's PLUGIN cell starts, in cells
	for _, l := range strings.Split(h.m.View(), "\n") {
		if i := strings.Index(l, "hostp…"); i >= 0 {
			plugin = append(plugin, ansi.StringWidth(l[:i]))
		}
	}
	if len(plugin) < 2 {
		t.Fatalf("the list shows %d rows of plugin hostpath, cut: the test tests nothing\n%s", len(plugin), h.m.View())
	}
	for _, c := range plugin[1:] {
		if c != plugin[0] {
			t.Errorf("the PLUGIN column starts at cells %v: a wide character cut left a row out of line\n%s", plugin, h.m.View())
			break
		}
	}
}
