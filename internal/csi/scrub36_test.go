package csi_test

// scrub36: what a terminal draws that the shown view did not: the screen scrolled under the
// cursor (SU, SD, a line feed at a scrolling region's margin), the cursor stopped at the
// screen's first row or a margin, DECSTBM's and DECOM's moves home and origin mode's rows, and
// ED erasing the display.

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// drawsWholeSecret is drawsWhole for another secret than shownSecret34: each echoed text is
// scrubbed of every word of the secret, the words around it kept.
func drawsWholeSecret(t *testing.T, secret string, cases []struct{ name, echoed string }) {
	t.Helper()
	for _, c := range cases {
		msg := "stage failed:\n" + c.echoed + "\n rejected"
		got := csi.Scrubber([]string{secret})(msg)
		for _, part := range strings.Fields(secret) {
			if strings.Contains(got, part) {
				t.Errorf("%s: scrubbed %+q\n to %+q: %q of the secret is left", c.name, msg, got, part)
			}
		}
		if !strings.Contains(got, "[REDACTED]") || !strings.HasPrefix(got, "stage failed:\n") || !strings.HasSuffix(got, "\n rejected") {
			t.Errorf("%s: scrubbed %+q\n to %+q; want the secret masked, the words around it kept", c.name, msg, got)
		}
	}
}

// The adversary: a plugin that writes a secret's first half, then brings that row back under
// the cursor by scrolling the screen (SD: what was a row up is now the cursor's; SU then a
// move up), by DECSTBM's move home, by origin mode's rows counted from a margin, by a line feed
// at a region's bottom margin, or by CUU stopped at the screen's first row, and writes the rest
// after it. Every terminal draws the secret whole; before, the view drew none of these moves
// and each was shown.
func TestScrubDrawsTheScreenScrolledUnderTheCursor(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		{"scroll down (SD) brings the row above under the cursor", "hunter2-XXXXXX\n\x1b[T\x1b[9Gs3cret"},
		{"scroll down quoted", `hunter2-XXXXXX\n\u001b[T\u001b[9Gs3cret`},
		{"scroll up (SU), then cursor up", "hunter2-XXXXXX\x1b[S\x1b[A\x1b[9Gs3cret"},
		{"reverse index at the screen's top scrolls down", "\x1b[1;1Hhunter2-XXXXXX\n\x1bM\x1b[9Gs3cret"},
		{"cursor up stops at the screen's first row", "\x1b[1;1Hhunter2-XXXXXX\x1b[5A\x1b[9Gs3cret"},
		{"DECSTBM sends the cursor home", "\x1b[1;1Hhunter2-XXXXXX\x1b[r\x1b[8Cs3cret"},
		{"origin mode counts rows from the top margin", "\x1b[5;1Hhunter2-XXXXXX\x1b[3;20r\x1b[?6h\x1b[3;9Hs3cret"},
		{"line feed at the region's bottom margin scrolls it", "\x1b[1;2r\x1b[2;1Hhunter2-XXXXXX\n\x1b[1;9Hs3cret"},
		{"cursor down stops at the region's bottom margin", "\x1b[1;2r\x1b[2;1Hhunter2-XXXXXX\x1b[5B\x1b[9Gs3cret"},
		{"a region scrolled, a row outside it kept", "\x1b[3;4r\x1b[1;1Hhunter2-XXXXXX\x1b[4;1H\x1b[S\x1b[1;9Hs3cret"},
		// The bottom of a screen with no region is not known: a line feed goes down, and the
		// halves are drawn five rows apart. Masked all the same: the bytes hold nothing but
		// escapes between "hunter2-" and "s3cret" (what --json and the logs carry), and the
		// rows drawn, blank ones left out, are base64 broken into an indented line.
		{"cursor down five rows, then the rest", "\x1b[1;1Hhunter2-\x1b[5B\x1b[9Gs3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// SU moves what was written up: the cursor's row is a new one below it.
		{"hunter2-XXXXXX\n\x1b[S\x1b[9Gs3cret", "hunter2-XXXXXX\n\n        s3cret"},
		// Origin mode's home is the top margin, a row below the first half.
		{"\x1b[1;1Hhunter2-XXXXXX\x1b[2;5r\x1b[?6h\x1b[8Cs3cret", "hunter2-XXXXXX\n        s3cret"},
		// A region's scroll moves the rows inside it only: the row above it is not brought down.
		{"\x1b[3;4r\x1b[1;1Hhunter2-XXXXXX\x1b[4;1H\x1b[T\x1b[2;9Hs3cret", "hunter2-XXXXXX\n        s3cret"},
		// Honest redraws: a status line cleared and written again.
		{"copying 10%\x1b[2J\x1b[Hcopying 100% (hunter2 done)", "copying 100% (hunter2 done)"},
	})
}

// The adversary: a plugin that draws a passphrase's blank with ED (erase display) where the
// view held a letter: the line erased from the cursor on (ED 0) or up to it (ED 1, DECSED),
// and the rest written after, or the line written again. Before, ED was not drawn, and the
// view read the erased X between the words.
func TestScrubDrawsEraseDisplay(t *testing.T) {
	t.Parallel()
	drawsWholeSecret(t, "hunter2 s3cret", []struct{ name, echoed string }{
		{"ED 0, the rest written a column on", "hunter2XXXXXXX\x1b[8G\x1b[J\x1b[Cs3cret"},
		{"ED 0 quoted", `hunter2XXXXXXX\u001b[8G\u001b[0J\u001b[Cs3cret`},
		{"ED 1, the line written again", "XXXXXXXXs3cret\x1b[8G\x1b[1J\rhunter2"},
		{"DECSED 1", "XXXXXXXXs3cret\x1b[8G\x1b[?1J\rhunter2"},
	})
	// A secret with a line break in it, whose first line ED 0 cut to it, the rows below erased.
	drawsWholeSecret(t, "line-1\nline-2", []struct{ name, echoed string }{
		{"ED 0 cuts the line before the break", "line-1XX\nline-2\x1b[A\x1b[7G\x1b[J\nline-2"},
	})
	// Held before and still: ED 1 erased the first half a row up, and a terminal draws
	// "        s3cret" alone, but whoever reads the bytes (--json, a log) reads hunter2- and
	// s3cret a line apart; the reading that does not draw the screen's edits (readScreen clear,
	// scrub35's) still finds it, so drawing ED shows nothing it masked.
	drawsWhole(t, []struct{ name, echoed string }{
		{"ED 1 erasing a first half a row up", "hunter2-\n\x1b[1J\x1b[A\x1b[9Gs3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// ED 0 from the X on: the blank is the passphrase's, not the secret's hyphen.
		{"hunter2XXXXXXX\x1b[8G\x1b[J\x1b[Cs3cret", "hunter2 s3cret"},
	})
}

// The adversary: a plugin that backspaces over a character whose width terminals differ on,
// so that the secret is drawn whole where it takes two columns: an East Asian ambiguous one
// (a circled digit, "±", a Cyrillic letter, "…") in a CJK locale's terminal, an emoji made
// wide by VS16 in kitty, WezTerm, iTerm2 or Windows Terminal; and one that mixes the two so
// that only one terminal's pair of readings draws it. Before, the view read both as one column
// and found none of them.
func TestScrubDrawsCharactersTerminalsWidenOtherwise(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		{"circled digit, wide in a CJK locale", "hun\u2460\b\bter2-s3cret"},
		{"plus-minus, wide in a CJK locale", "hun\u00b1\b\bter2-s3cret"},
		{"Cyrillic letter, wide in a CJK locale", "hun\u0416\x1b[2Dter2-s3cret"},
		{"ellipsis, wide in a CJK locale", "hunter2-s3cr\u2026\b\bet"},
		{"emoji made wide by VS16", "hun\u2764\ufe0f\b\bter2-s3cret"},
		{"emoji made wide by VS16, quoted", `hun\u2764\ufe0f\b\bter2-s3cret`},
		// Two ambiguous characters and a VS16 emoji: five backspaces reach column 1 only where
		// the first are wide and the emoji is not (a CJK locale's VTE); four, only where the
		// emoji is wide and they are not (kitty).
		{"ambiguous wide, emoji narrow", "h\u00b1\u00b1\u2764\ufe0f\b\b\b\b\bunter2-s3cret"},
		{"emoji wide, ambiguous narrow", "h\u00b1\u00b1\u2764\ufe0f\b\b\b\bunter2-s3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// Three backspaces: column 0 where "±" is narrow, 2 where it is wide: no secret either way.
		{"hun\u00b1\b\b\bter2-s3cret", "ter2-s3cret"},
		// Honest accented and ambiguous text redrawn: kept.
		{"café…\rcafé ±5%", "café ±5%"},
		{"\u2764\ufe0f hunter2 \u2460\r\u2764\ufe0f done", "❤️ done"},
	})
}

// The adversary: a plugin that draws a secret by a move back into columns where it first wrote
// the secret's head with another letter after it, then erased that letter (EL 1, ED 1) and
// wrote the head again, or wrote the head, then a row elsewhere, then came back. The value is
// found, from its first source to its last; what drew first in its columns, before that, was
// left as it was, and once the value was masked a terminal drew it again: "hunter2X[REDACTED]"
// (scrub35's head, the stretch just before the value that begins it, missed it: the X). Now
// whatever drew a character in the value's columns before it is masked with it (shownBounds,
// draw's firsts).
func TestScrubMasksWhatDrewFirstInAValuesColumns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ secret, echoed string }{
		{"hunter2 s3cret", "hunter2Xs3cret\x1b[8G\x1b[1K\rhunter2"},
		{"hunter2 s3cret", "hunter2Xs3cret\x1b[8G\x1b[1J\rhunter2"},
		{"hunter2 s3cret", "hunter2X\nY\x1b[A\x1b[9Gs3cret\x1b[8G\x1b[1K\rhunter2"},
	} {
		msg := "stage failed:\n" + c.echoed + "\n rejected"
		if got := csi.Scrubber([]string{c.secret})(msg); got != "stage failed:\n[REDACTED]\n rejected" {
			t.Errorf("scrubbed %q\n to %q; want the secret masked with what drew first in its columns", msg, got)
		}
	}
	// Honest: a value drawn in its order over a progress line is masked alone, the line kept.
	msg := "copying 50%\rhunter2-s3cret rejected"
	if got := csi.Scrubber([]string{shownSecret34})(msg); got != "copying 50%\r[REDACTED] rejected" {
		t.Errorf("scrubbed %q\n to %q; want the progress line kept", msg, got)
	}
}

// The adversary: a plugin echoing a secret with ESC in it through an escape for ESC that no
// quoting of the whole value writes (Rust's Debug "\u{1b}", JavaScript's util.inspect "\x1B",
// Ruby's inspect "\e", Java's JSON "\u001B", cat -v's "^["), or drawing a colour inside a
// secret with ESC spelled as cat -v shows it. Before, each was shown whole: the view read the
// decoded ESC as beginning a sequence (ESC s ate the s), and "^[" as two characters.
func TestScrubFindsESCSpelledEveryWay(t *testing.T) {
	t.Parallel()
	const secret = "hunter2\x1bs3cret"
	for _, echoed := range []string{
		`hunter2\u{1b}s3cret`,
		`hunter2\u{001b}s3cret`,
		`hunter2\x1Bs3cret`,
		`hunter2\es3cret`,
		`hunter2\u001Bs3cret`,
		`hunter2^[s3cret`,
	} {
		msg := `bad secret "` + echoed + `"!`
		if got := csi.Scrubber([]string{secret})(msg); got != `bad secret "[REDACTED]"!` {
			t.Errorf("scrubbed %q\n to %q; want the value masked", msg, got)
		}
	}
	drawsWhole(t, []struct{ name, echoed string }{
		{"a colour inside, ESC as cat -v shows it", "hun^[[0mter2-s3cret"},
		{"a move back, ESC as cat -v shows it", "hunter2-XXXXXX^[[6Ds3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// A caret that begins a regular expression is read as ESC too: what it draws holds no
		// secret, and the message is kept.
		{"name must match ^[a-z0-9-]+$, not hunter2-s3cre", "name must match -z0-9-]+$, not hunter2-s3cre"},
		{"hunter2 ^ s3cret", "hunter2 ^ s3cret"},
	})
}

// TestPluginMessageCutAtATruncatedMarkShowsNoPartOfIt is
// TestPluginMessageCutByThePluginInASecretShowsNoPartOfIt and
// TestPluginMessageBegunInASecretShowsNoPartOfIt at a word in brackets that says the text was
// cut ("(truncated)", "[output truncated]", "<truncated 1200 bytes>"), which a plugin, a mount
// helper or a log library writes where it cut a text, in place of or after an ellipsis. Before,
// the secret's head before it, or its tail after it, was shown. An honest message keeps its
// words: a mark with no secret's part beside it, or two bytes of one.
func TestPluginMessageCutAtATruncatedMarkShowsNoPartOfIt(t *testing.T) {
	t.Parallel()
	cut := sentinelSecret[:len(sentinelSecret)-2]
	tail := sentinelSecret[2:]
	stagedMessagesShownAs(t, []struct{ msg, want string }{
		{"auth failed: token=" + cut + " (truncated)", "auth failed: token=[REDACTED] (truncated)"},
		{"token=" + cut + "[output truncated]", "token=[REDACTED][output truncated]"},
		{"<truncated 1200 bytes> " + tail + " rejected", "<truncated 1200 bytes> [REDACTED] rejected"},
		{"stderr: ...(truncated) " + tail + "\n", "stderr: ...(truncated) [REDACTED]\n"},
		{"mount: [TRUNCATED]" + tail + ", exit status 32", "mount: [TRUNCATED][REDACTED], exit status 32"},
		// Honest: no secret's part beside the mark, or two bytes of one.
		{"name too long (truncated to 63 bytes): vol-1", "name too long (truncated to 63 bytes): vol-1"},
		{"retry " + sentinelSecret[:2] + " (truncated)", "retry " + sentinelSecret[:2] + " (truncated)"},
	})
}
