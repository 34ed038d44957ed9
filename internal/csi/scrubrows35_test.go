package csi

import (
	"strings"
	"testing"
)

// Rows a message makes above the last one and goes back to are drawn once each, top to
// bottom, whatever the order they were made in. Before recheck35 each row made above the last
// was inserted in place, the rows after it moved each time: a plugin's message of
// "\x1b[Ax" repeated (a row up before each character), 1 MiB of it, cost 12 s of CPU to
// scrub, 4 MiB (gRPC's bound) minutes, at every command that printed it
// (BenchmarkScrubMovingUpEachCharacter: 69 ms before scrub34 drew rows, 12.2 s after it,
// 0.3-0.5 s now). Now a row is appended and found again by its key, and the rows sorted once.
func TestScrubOfAMessageMovingUpEachCharacterIsLinear(t *testing.T) {
	t.Parallel()
	// A on row 0; B a row up; C two rows down; D three up; E one down, on B's row again.
	view, at, _, _ := shownView("A\x1b[AB\x1b[2BC\x1b[3AD\x1b[BE", false, controlsEscaped)
	if want := "   D\n B  E\nA\n  C"; view != want {
		t.Errorf("drawn %q; want %q (each row once, top to bottom)", view, want)
	}
	if len(at) != len(view)+1 {
		t.Errorf("a view of %d bytes with %d offsets", len(view), len(at))
	}
	// A secret drawn on a row the message leaves, goes above and comes back to is found.
	msg := "stage failed: hunter2-\x1b[BXX\x1b[2AYY\x1b[B\x1b[4Ds3cret\n rejected"
	if got := Scrubber([]string{"hunter2-s3cret"})(msg); strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") {
		t.Errorf("scrubbed %+q\n to %+q: the secret drawn on a row come back to is left", msg, got)
	}
	// Many rows made upward, one character each: every one drawn, in order.
	up := strings.Repeat("\x1b[Ax", 1000)
	if view, _, _, _ := shownView(up, false, controlsEscaped); strings.Count(view, "x") != 1000 || strings.Count(view, "\n") < 999 {
		t.Errorf("1000 rows made upward drew %d characters on %d lines", strings.Count(view, "x"), strings.Count(view, "\n")+1)
	}
}

// Rows found by their key once a row above the last was written to, then moved by IL or DL
// (scrub35's drawing of them, merged beside recheck35's rows found by key): the rows are
// found at their new keys. Before, a row deleted by DL was still found at its old key and
// written to, out of the view: "hunter2-" moved up into the deleted row's place and "s3cret"
// written after it, as a terminal draws it, was not found.
func TestRowsMovedByInsertOrDeleteAreFoundAtTheirNewRows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ msg, want string }{
		{"ab\ncd\x1b[AZ\x1b[M\rX", "Xd"},
		{"ab\ncd\x1b[AZ\x1b[L\rX", "X\nabZ\ncd"},
		{"ab\ncd\x1b[AZ\x1b[2L\x1b[BY", "Y\nabZ\ncd"},
	} {
		if view, _, _, _ := shownView(c.msg, false, controlsEscaped); view != c.want {
			t.Errorf("%q drawn %q; want %q", c.msg, view, c.want)
		}
	}
	msg := "stage failed:\nXXXXXXXX\nhunter2-\x1b[AZ\x1b[M\x1b[9Gs3cret\n rejected"
	if got := Scrubber([]string{"hunter2-s3cret"})(msg); strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") {
		t.Errorf("scrubbed %+q\n to %+q: the secret drawn into a row DL moved up is left", msg, got)
	}
}

// BenchmarkScrubMovingUpEachCharacter scrubs 1 MiB of a plugin's message that moves a row up
// before each character (TestScrubOfAMessageMovingUpEachCharacterIsLinear).
func BenchmarkScrubMovingUpEachCharacter(b *testing.B) {
	msg := strings.Repeat("\x1b[Ax", 1<<18)
	scrub := Scrubber([]string{"hunter2-s3cret"})
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		scrub(msg)
	}
}
