package csi

import (
	"strings"
	"testing"
)

// A message of cursor moves forward past the line's end (CUF with the largest count, and CHA to
// a far column) draws blanks: at most the message's length of them in all, and a move's count
// at most maxMove, so a plugin's 4 MiB of them cannot have the view grow past twice the
// message (before the bound, each "\x1b[65535C" of 9 bytes wrote 65,535 blanks).
func TestShownViewBlanksAreBounded(t *testing.T) {
	for _, msg := range []string{
		strings.Repeat("\x1b[65535C", 4096),
		strings.Repeat("x\x1b[99999G", 4096),
	} {
		view, at, _, _ := shownView(msg, false, controlsEscaped)
		if at == nil || len(view) > 2*len(msg) || len(at) != len(view)+1 {
			t.Errorf("shownView of %d bytes of moves: a view of %d bytes (%d offsets); want at most %d", len(msg), len(view), len(at), 2*len(msg))
		}
	}
	// scrub35: REP, ICH, DCH, ECH and EL 1 write, move or blank at most the message's length
	// of cells in all, and IL and DL move at most as many rows (a row as long as the message, then 4 KiB of edits at its start, each
	// moving all of it, cost the message's length squared).
	row := strings.Repeat("x", 1<<14)
	for _, msg := range []string{
		strings.Repeat("x\x1b[256b", 4096),
		row + "\x1b[G" + strings.Repeat("\x1b[256@", 4096),
		row + "\x1b[G" + strings.Repeat("\x1b[P", 4096),
		row + strings.Repeat("\x1b[G\x1b[256X", 4096),
		row + strings.Repeat("\x1b[1K", 4096),
		strings.Repeat("x\n", 1<<13) + strings.Repeat("\x1b[A\x1b[L", 4096),
		strings.Repeat("x\n", 1<<13) + strings.Repeat("\x1b[A\x1b[M", 4096),
	} {
		view, at, _, _ := shownView(msg, false, controlsEscaped)
		if at == nil || len(view) > 3*len(msg) || len(at) != len(view)+1 {
			t.Errorf("shownView of %d bytes of edits: a view of %d bytes (%d offsets); want at most %d", len(msg), len(view), len(at), 3*len(msg))
		}
	}
	if n := csiCount([]byte("99999999999999999999")); n != maxMove {
		t.Errorf("csiCount of a huge count = %d; want %d", n, maxMove)
	}
}
