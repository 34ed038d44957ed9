package csi_test

// scrub35: the escapes a quoting writes for a control byte (\b, \t, \n, \r, \v, \f, \a, Rust's
// and C's \0), and a value with a control byte in it echoed through escapes.

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The adversary: a plugin whose message is a string a reader decodes (a backend's JSON answer
// quoted, a Go %q, a Python repr: the --json's reader, jq -r, a log viewer), with the secret
// written whole by the cursor moves its escaped control bytes make ("hunter2-X\bs3cret": JSON
// writes a backspace as \b), or with a secret holding a tab or a carriage return written
// through an escape no quoting of the whole value writes ("pass\u0009word", a tab with a zero
// width space after it). Before, the shown view kept \b, \t, \r... as written while it undid
// \u0008, \x09 and the rest (a backspace escaped one way drew the secret, the other way did
// not), and drew a tab as blanks, which no value with a tab in it spells: each was left whole.
func TestScrubReadsTheEscapesOfControlBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, secret, echoed string }{
		{"backspace as JSON writes it", shownSecret34, `hunter2-X\bs3cret`},
		{"carriage return and tab as Go writes them", shownSecret34, `hunter2-XXXXXX\r\ts3cret`},
		{"bell as Go writes it, shown as nothing", shownSecret34, `hun\ater2-s3cret`},
		{"NUL as Rust writes it, shown as nothing", shownSecret34, `hunter2\0-s3cret`},
		{"line feed, then cursor up", shownSecret34, `hunter2-XXXXXX\n\u001b[A\u001b[8Cs3cret`},
		{"line feed, then cursor up begun by a C1 CSI", shownSecret34, `hunter2-XXXXXX\n\u009bA\u009b8Cs3cret`},
		{"vertical tab, then cursor up", shownSecret34, `hunter2-\v\x1b[As3cret`},
		{"a tab as JSON's \\u0009", "pass\tw0rd-9", `pass\u0009w0rd-9`},
		{"a tab as \\x09", "pass\tw0rd-9", `pass\x09w0rd-9`},
		{"a tab, a zero width space after it", "pass\tw0rd-9", "pass\tw\u200b0rd-9"},
		{"a tab, a letter escaped", "pass\tw0rd-9", "pass\tw\\u0030rd-9"},
		{"CRLF as \\u000d\\u000a", "line-1\r\nline-2", `line-1\u000d\u000aline-2`},
	} {
		// Each echoed text begins a line: its moves are counted from the line's start.
		msg := "stage failed:\n" + c.echoed + "\n rejected"
		got := csi.Scrubber([]string{c.secret})(msg)
		if got != "stage failed:\n[REDACTED]\n rejected" {
			t.Errorf("%s: scrubbed %q\n to %q; want the echoed value masked, the words around it kept", c.name, msg, got)
		}
	}
}

// The honest case: escaped control bytes a decoding reader draws without the secret, and a
// Windows path whose backslashes read as escapes, are kept; a value with a tab quoted as every
// quoting writes it, and one with a line break, still found.
func TestScrubKeepsEscapedControlsThatDrawNoSecret(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ msg, shown string }{
		{`"hunter2-\ts3cret"`, "hunter2-        s3cret"},
		{`"hunter2-s3cre\bX"`, "hunter2-s3crX"},
		{`C:\temp\new\hunter2\bin\s3cret.txt`, "a path"},
		{`line one\r\nline two\thunter2 \b s3cret`, "honest text"},
	} {
		if got := csi.Scrubber([]string{shownSecret34})(c.msg); got != c.msg {
			t.Errorf("scrubbed %q\n to %q, though a reader decoding it reads %q: no secret", c.msg, got, c.shown)
		}
	}
	for _, c := range []struct{ secret, echoed string }{
		// A decoding reader draws s3cret2-, but the --json's reader reads hunter2-\rs3cret: a
		// bare carriage return between two parts is joined as a line break is (scrub36; kept
		// before, in the list above).
		{shownSecret34, `hunter2-\rs3cret`},
		{"pass\tw0rd-9", `pass\tw0rd-9`},
		{"pass\tw0rd-9", "pass\tw0rd-9"},
		{"line-1\nline-2", `line-1\nline-2`},
		{"line-1\nline-2", `line-1\u000aline-2`},
	} {
		msg := "bad secret \"" + c.echoed + "\"!"
		if got := csi.Scrubber([]string{c.secret})(msg); got != `bad secret "[REDACTED]"!` {
			t.Errorf("scrubbed %q\n to %q; want the value masked", msg, got)
		}
	}
}

// The adversary: a plugin that draws a secret with the editing sequences of xterm and VTE, which
// the view did not draw (scrub35): REP repeating the last character (a doubled letter), ICH
// inserting blanks that its letters are then written into, DCH deleting what stood between
// its halves, and, for a value with a space in it (a passphrase), ECH and EL 1 blanking a
// letter between its words. Before, each was shown whole.
func TestScrubDrawsTheEditingSequences(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, secret, echoed string }{
		{"REP, a doubled letter", "s3cret-passw0rd", "s3cret-pas\x1b[bw0rd"},
		{"REP of three", "s3cret-paaaaw0rd", "s3cret-pa\x1b[3bw0rd"},
		{"ICH, the letters written into the blanks", shownSecret34, "hunter2-cret\x1b[9G\x1b[2@s3"},
		{"DCH, what stood between deleted", shownSecret34, "hunter2-XXs3cret\x1b[9G\x1b[2P"},
		{"DCH, quoted", shownSecret34, `hunter2-XXs3cret\x1b[9G\u001b[2P`},
		{"ECH, a passphrase's blank", "hunter2 s3cret", "hunter2Xs3cret\x1b[8G\x1b[X"},
		{"EL 1, the line written again", "hunter2 s3cret", "XXXXXXXXs3cret\x1b[8G\x1b[1K\rhunter2"},
		// DL: the row above deleted, the secret's first half moves up into it, and the rest is
		// written after it there; IL: an empty row inserted pushes the first half down into the
		// row the rest is written in.
		{"DL, the rows below moved up", shownSecret34, "XXXXXXXX\nhunter2-\x1b[A\x1b[M\x1b[9Gs3cret"},
		{"IL, the row moved down", shownSecret34, "hunter2-\x1b[L\n\x1b[8Cs3cret"},
	} {
		msg := "stage failed:\n" + c.echoed + "\n rejected"
		got := csi.Scrubber([]string{c.secret})(msg)
		if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") || strings.Contains(got, "w0rd") {
			t.Errorf("%s: scrubbed %q\n to %q: a part of the secret is left", c.name, msg, got)
		}
		if !strings.Contains(got, "[REDACTED]") || !strings.HasPrefix(got, "stage failed:\n") || !strings.HasSuffix(got, "\n rejected") {
			t.Errorf("%s: scrubbed %q\n to %q; want the secret masked, the words around it kept", c.name, msg, got)
		}
	}
	// Honest: the same sequences drawing something else than the secret are kept.
	for _, c := range []struct{ msg, shown string }{
		{"hunter2-cret\x1b[9G\x1b[2@", "hunter2-  cret"},
		{"hunter2-XXs3cret\x1b[9G\x1b[1P", "hunter2-Xs3cret"},
		{"hunter2-s3crXt\x1b[13G\x1b[X", "hunter2-s3cr t"},
		{"hunter2-s3cre\x1b[3b", "hunter2-s3creeee"},
		{"XXXXXXXXs3cret\x1b[9G\x1b[1K\rhunter2", "hunter2  3cret"},
	} {
		if got := csi.Scrubber([]string{shownSecret34})(c.msg); got != c.msg {
			t.Errorf("scrubbed %q\n to %q, though a terminal draws %q: no secret", c.msg, got, c.shown)
		}
	}
}

// The adversary: a plugin that writes a secret's head, writes over it, and draws the secret by
// writing its head again after a move back ("hunter2-sXXXXX", a carriage return, "hunter2-",
// a cursor move over the s, "3cret"). The view finds it, from the second head to the tail; the
// first head, before that, was left as it was, and once the moves after it were masked a
// terminal drew it again: "hunter2-[REDACTED]". The stretch before a value drawn by a move
// back that begins it is masked with it (scrub35).
func TestScrubMasksTheHeadAValueWasDrawnOver(t *testing.T) {
	t.Parallel()
	for _, echoed := range []string{
		"hunter2-sXXXXX\rhunter2-\x1b[C3cret",
		"hunter2-XXXX\b\b\b\bs3cret",
	} {
		msg := "stage failed:\n" + echoed + "\n rejected"
		if got := csi.Scrubber([]string{shownSecret34})(msg); got != "stage failed:\n[REDACTED]\n rejected" {
			t.Errorf("scrubbed %q\n to %q; want the secret masked with the head it was drawn over", msg, got)
		}
	}
}
