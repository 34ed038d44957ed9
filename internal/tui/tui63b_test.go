package tui

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/display"
)

// fitCodePoints measured each code point with ansi.StringWidth, which gives a regional
// indicator (half of a flag) two cells; wcwidth, which the function says it models (xterm,
// VTE, tmux, screen; glibc's wcwidth(U+1F1E9) is 1), gives it one, and a terminal that joins
// the pair draws the flag in two cells too: no terminal draws a flag in four. So a line that
// fits by both counts, a flag in it, was cut with "…" two cells short, and what was cut is
// drawn nowhere: the end of a full-width row, of a detail value wrapped to the width (the
// wrap fills each line to the edge), of a status line. Found by helper review63 (own2).
func TestFlagLineThatFitsIsNotCut(t *testing.T) {
	const w = 40
	line := "region = \U0001F1E9\U0001F1EA " + strings.Repeat("x", w-len("region = ")-3-4) + "tail"
	if got := display.Width(line); got != w {
		t.Fatalf("premise: the line is %d cells by clusters, want %d", got, w)
	}
	// wcwidth's count: two cells for the flag's two regional indicators, one for each ASCII byte.
	wc := 2 + len(line) - len("\U0001F1E9\U0001F1EA")
	if wc != w {
		t.Fatalf("premise: the line is %d cells by wcwidth, want %d", wc, w)
	}
	if got := fitCodePoints(line, w); got != line {
		t.Errorf("fitCodePoints cut a line of %d cells (by clusters and by wcwidth alike) at a width of %d:\n got  %q\n want %q (codePointWidth says %d)", w, w, got, line, codePointWidth(line))
	}
}
