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
	if n := csiCount([]byte("99999999999999999999")); n != maxMove {
		t.Errorf("csiCount of a huge count = %d; want %d", n, maxMove)
	}
}
