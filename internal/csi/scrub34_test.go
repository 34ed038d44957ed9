package csi_test

// scrub34: the shown view drawn in a terminal's columns and rows. A wide character (East Asian
// wide, emoji) takes two columns and a combining mark none, a backspace and CUB go back one
// column each; a line move (CUU, CUD, CNL, CPL, CUP, VPA, ESC M, ESC D, ESC E, a vertical tab or
// form feed) goes to another row without leaving the column, and what is written there is
// written over what that row holds; a tab moves to the next stop however far into its line.
// Before, the view counted characters, not columns, joined a line break's rows when a move
// took the cursor back, dropped a vertical tab and form feed, kept a tab past 256 bytes into
// its line as one character, and the line-join pass read a bare carriage return as a line
// break: a secret drawn whole was left, and honest text a terminal shows otherwise was masked.

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// shownSecret34 is the secret each case below draws, or draws something else than.
const shownSecret34 = "hunter2-s3cret"

// drawsWhole checks that each echoed text, which a terminal draws with the secret whole, is
// scrubbed of every part of it, the words around it kept.
func drawsWhole(t *testing.T, cases []struct{ name, echoed string }) {
	t.Helper()
	for _, c := range cases {
		msg := "stage failed:\n" + c.echoed + "\n rejected"
		got := csi.Scrubber([]string{shownSecret34})(msg)
		if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") || strings.Contains(got, "ter2-") {
			t.Errorf("%s: scrubbed %+q\n to %+q: a part of the secret is left", c.name, msg, got)
		}
		if !strings.Contains(got, "[REDACTED]") || !strings.HasPrefix(got, "stage failed:\n") || !strings.HasSuffix(got, "\n rejected") {
			t.Errorf("%s: scrubbed %+q\n to %+q; want the secret masked, the words around it kept", c.name, msg, got)
		}
	}
}

// drawsOtherwise checks that each message, which a terminal draws without the secret (shown:
// what it draws, for the reader of the test), is kept as it is.
func drawsOtherwise(t *testing.T, cases []struct{ msg, shown string }) {
	t.Helper()
	for _, c := range cases {
		if got := csi.Scrubber([]string{shownSecret34})(c.msg); got != c.msg {
			t.Errorf("scrubbed %+q\n to %+q, though a terminal draws %q: no secret", c.msg, got, c.shown)
		}
	}
}

func TestScrubDrawsWideAndCombiningCharactersInTheirColumns(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		// 界 takes columns 3 and 4; two backspaces go back to 3, and "ter2" written from there
		// rubs it out: the line shows hunter2-s3cret.
		{"wide character, backspaced over by columns", "hun界\b\bter2-s3cret"},
		{"emoji, backspaced over", "hunter2-\U0001F600\b\bs3cret"},
		{"wide character, cursor back (CUB 2)", "hunter2-s3cr界\x1b[2Det"},
		// The acute accent sits on X, in X's column: one backspace goes back over both.
		{"combining mark, backspaced over with its letter", "hunter2-s3cX\u0301\bret"},
		{"wide character in the line, tab after a return", "界界界界hunter2-XXXXXX\r\t\ts3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// The accent has no column of its own: two backspaces go back over X and to the e, and
		// t is written over the e.
		{"hunter2-s3creX\u0301\b\bt", "hunter2-s3crtX́"},
		// One backspace goes back to 界's right half; r written there rubs out its left half.
		{"hunter2-s3c界\bret", "hunter2-s3c ret"},
		{"hunter2-界s3cret\b\b\b\b\b\b\b\b\bXX", "hunter2XX s3cret"},
		// Honest wide text and accents, no moves: kept.
		{"ボリューム hunter2 を作成できません\r\n", "ボリューム hunter2 を作成できません"},
		{"café\x1b[0m hunter2-s3crét", "café hunter2-s3crét"},
	})
}

func TestScrubDrawsLineMovesAsATerminalMovesTheCursor(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		{"line feed, then cursor up (CUU)", "hunter2-XXXXXX\n\x1b[A\x1b[8Cs3cret"},
		{"previous line (CPL)", "hunter2-XXXXXX\nsecond line\x1b[F\x1b[8Cs3cret"},
		{"reverse index (ESC M)", "hunter2-XXXXXX\n\x1bM\x1b[8Cs3cret"},
		{"reverse index quoted", "hunter2-XXXXXX\n" + `\u001bM\u001b[8Cs3cret`},
		{"up, then next line (CNL)", "hunter2-XXXXXX\x1b[A\x1b[E\x1b[8Cs3cret"},
		{"up, then vertical tab down in the same column", "hunter2-\x1b[A\vs3cret"},
		{"up, then form feed down", "hunter2-\x1bM\fs3cret"},
		{"up, then index down (ESC D)", "hunter2-\x1b[A\x1bDs3cret"},
		{"down (CUD), then back up", "hunter2-\x1b[2Bwhatever\x1b[2A\x1b[9Gs3cret"},
		{"cursor position (CUP), twice", "\x1b[5;1Hhunter2-XXXXXX\n\n\x1b[5;9Hs3cret"},
		{"line position (VPA)", "\x1b[7dhunter2-XXXXXX\n\x1b[7d\x1b[9Gs3cret"},
		{"saved on one line, restored from another", "hunter2-\x1b7XXXXXX\nnext\x1b8s3cret"},
		// A vertical tab, a form feed, CUD and IND go down a line in the same column: a
		// terminal draws two lines, "hunter2-" and "        s3cret" under it, which is base64
		// broken into an indented line, joined as the same text written with a line feed is
		// ("LF between base64 characters, indented"), and as a bare CR is (scrub36).
		{"vertical tab down", "hunter2-\vs3cret"},
		{"form feed down", "hunter2-\fs3cret"},
		{"cursor down (CUD)", "hunter2-\x1b[Bs3cret"},
		{"index (ESC D)", "hunter2-\x1bDs3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// Honest progress redrawn a line up: kept.
		{"copying 10%\nhunter2 done\x1b[A\r\x1b[Kcopying 100%\n\n", "copying 100%\nhunter2 done"},
	})
}

// A tab moves to the next stop however far into the line: before, past 256 bytes it was one
// character written over another, and the 38th tab after the return stopped short of XXXXXX.
func TestScrubDrawsATabFarIntoALine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A", 296)
	drawsWhole(t, []struct{ name, echoed string }{
		{"tabs past 256 columns", long + "hunter2-XXXXXX\r" + strings.Repeat("\t", 38) + "s3cret"},
		{"tabs past 256 columns, then written over", long + "XXXXXXXXs3cret\r" + strings.Repeat("\t", 37) + "hunter2-"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// The tab after 300 columns goes to column 304: hunter2- is not written over XX.
		{strings.Repeat("B", 300) + "XXXXs3cret\r" + long + "\thunter2-", long + "BBBBXXXXhunter2-"},
	})
}

// The line-join pass (base64 broken into lines) read a bare carriage return as a line break
// before scrub34, which stopped it, since a terminal goes back to the line's start there and
// writes s3cret over hunter: it draws s3cret2-. But volctl's output is not only a terminal:
// --json, the event log, the agent's log and a redirect to a file carry the byte or its escape,
// where a reader reads hunter2- and then s3cret (scrub36). The secret must be unreadable in
// every view volctl writes, so a bare carriage return (raw or escaped) between two base64
// characters is a break joined again, as CRLF and LF are: the cases a terminal draws as
// s3cret2- are masked now, where scrub34 kept them; the rule is stronger, not weaker.
// Base64 broken by CRLF or LF is still joined, and a carriage return between other text
// (a progress line redrawn) is kept.
func TestScrubJoinsLinesAcrossABareCarriageReturn(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		// A terminal draws s3cret2- (scrub34's reading); --json, a log, a file read hunter2- s3cret.
		{"bare CR after a tab", "hunter2-\t\rs3cret"},
		{"bare CR", "hunter2-\rs3cret"},
		{"bare CR between blanks", "token: hunter2- \r s3cret"},
		// Quoted, the same: a reader of the --json reads hunter2-\rs3cret.
		{"quoted bare CR", `hunter2-\rs3cret`},
		{"CRLF between base64 characters", "hunter2-\r\ns3cret"},
		{"LF between base64 characters, indented", "hunter2-\n    s3cret"},
		{"quoted CRLF between base64 characters", `hunter2-\r\ns3cret`},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// A carriage return between text that is no secret's two parts is kept.
		{"copying 10%\rcopying 20%\rhunter2-done", "hunter2-done20%"},
		{"hunter2-\rXXXXXX s3cret", "XXXXXX s3cret"},
	})
}
