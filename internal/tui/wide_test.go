package tui

import (
	"fmt"
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
		if i := strings.Index(l, "hostpath"); i >= 0 {
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

// TestDialogOverWideCharacters: a dialog is drawn over the rows, cut at its left and right
// edges. A double-width character the cut falls inside of was kept whole on the right (the
// line one cell wider than the terminal, which wraps it and moves every line under it) and left
// out on the left (the box's border one cell left of the lines above it). Both edges stay put,
// and every line is the terminal's width, whatever the rows hold.
func TestDialogOverWideCharacters(t *testing.T) {
	for _, width := range []int{80, 120, 200} {
		for _, shift := range []string{"", "x"} { // the wide characters on odd cells, then even
			fake := fixture()
			for i := range 20 { // rows under the whole dialog
				c := fake.data.Claims[4]
				c.ID, c.VolumeID, c.Alloc = int64(100+i), strings.Repeat("卷", 20), fmt.Sprintf("分配%d", i+1)
				fake.data.Claims = append(fake.data.Claims, c)
			}
			for i := range fake.data.Claims {
				fake.data.Claims[i].LastError = shift + strings.Repeat("数据", 200)
				fake.data.Claims[i].TargetPath = shift + strings.Repeat("库", 200)
				fake.data.Claims[i].Alloc = shift + strings.Repeat("分配", 10) + fake.data.Claims[i].Alloc
				fake.data.Claims[i].VolumeID = shift + fake.data.Claims[i].VolumeID
			}
			h := newHarness(t, fake, Options{})
			h.send(sizeMsg(width))
			h.keys("2", "x") // the release dialog, over the claims
			out := h.m.View()
			checkScreen(t, out, width, 24)
			var borders []int // where the box's left border is on each line it crosses
			for i, l := range strings.Split(out, "\n") {
				if w := ansi.StringWidth(l); i > 0 && i < 22 && w != width {
					t.Errorf("%d columns, %q: line %d is %d cells wide, not %d: %q", width, shift, i+1, w, width, l)
				}
				if j := strings.IndexAny(l, "│╭╰"); j >= 0 {
					borders = append(borders, ansi.StringWidth(l[:j]))
				}
			}
			if len(borders) < 3 {
				t.Fatalf("%d columns: no dialog drawn:\n%s", width, out)
			}
			for _, b := range borders[1:] {
				if b != borders[0] {
					t.Errorf("%d columns, %q: the dialog's left border is at cells %v: a wide character cut at its edge moved it\n%s", width, shift, borders, out)
					break
				}
			}
		}
	}
}
