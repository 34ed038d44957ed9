package csi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// shownSecret is a secret with a character past U+FFFF, which JSON encoders that keep to ASCII
// (Python's json.dumps, Java's) write as a surrogate pair: "\ud83d\udd11".
const shownSecret = "k3y-\U0001f511-s3cret"

// escapedEvery is s with each character written as JSON's \uNNNN escape (a pair for one past
// U+FFFF), as an encoder escaping everything (or a hostile plugin) writes it.
func escapedEvery(s string, upper bool) string {
	var b strings.Builder
	for _, r := range s {
		if r > 0xffff {
			r -= 0x10000
			b.WriteString(hex4(0xd800+r>>10, upper) + hex4(0xdc00+r&0x3ff, upper))
			continue
		}
		b.WriteString(hex4(r, upper))
	}
	return b.String()
}

func hex4(r rune, upper bool) string {
	digits := "0123456789abcdef"
	if upper {
		digits = "0123456789ABCDEF"
	}
	return `\u` + string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

// The adversary: a plugin that echoes a secret with something written inside it that shows
// as nothing or is an escape a reader undoes: an ANSI escape sequence (raw, or as the "\x1b" or
// "\u001b" a quoting writes it), a zero width space, a soft hyphen, a bidi control, a control
// byte, or every character as JSON's \uNNNN (a surrogate pair past U+FFFF, as Python's
// json.dumps writes it). The terminal, the --json's reader and the log's reader see the
// secret whole, while none of the message's bytes spell it: before, each was left as it was.
// Honest text with escapes and invisible characters, and a secret's parts apart with visible
// text between them, are left as they are.
func TestScrubFindsAValueAsItIsShown(t *testing.T) {
	const s = "hunter2-s3cret"
	pyJSON, err := json.Marshal(shownSecret) // Go keeps UTF-8; Python's default escapes to ASCII
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pyJSON), `\u`) {
		t.Fatalf("Go's JSON escaped %q: the case below is not Python's", pyJSON)
	}
	for _, c := range []struct{ name, secret, echoed string }{
		{"ANSI colour raw", s, "hunter\x1b[31m2-s3\x1b[0mcret"},
		{"ANSI colour quoted by Go", s, `hunter\x1b[31m2-s3cret`},
		{"ANSI colour quoted by JSON", s, `hunter\u001b[31m2-s3cret`},
		{"ANSI colour as octal", s, `hunter\033[1;31m2-s3cret`},
		{"OSC title", s, "hun\x1b]0;x\x07ter2-s3cret"},
		{"zero width space", s, "hun\u200bter2-s3cret"},
		{"zero width space quoted", s, `hun\u200bter2-s3cret`},
		{"soft hyphen", s, "hunter2-\u00ads3cret"},
		{"bidi override", s, "hunter2\u202e-s3cret"},
		{"byte order mark", s, "hunter2-\ufeffs3\ufeffcret"},
		{"control byte, backspace over a byte", s, "hunter2\x00-s3X\x08cret"}, // a terminal writes c over X
		{"C1 control", s, "hunter2\u009b-s3cret"},
		{"every character as \\u", s, escapedEvery(s, false)},
		{"every character as \\u, upper-case", s, escapedEvery(s, true)},
		{"surrogate pair (Python json.dumps)", shownSecret, `k3y-\ud83d\udd11-s3cret`},
		{"surrogate pair, upper-case", shownSecret, `k3y-\uD83D\uDD11-s3cret`},
		{"every character, surrogates", shownSecret, escapedEvery(shownSecret, false)},
		{"\\U escape", shownSecret, `k3y-\U0001f511-s3cret`},
	} {
		msg := `stage failed: {"token": "` + c.echoed + `", "zone": "eu-1"}`
		got := csi.Scrubber([]string{c.secret})(msg)
		if want := `stage failed: {"token": "[REDACTED]", "zone": "eu-1"}`; got != want {
			t.Errorf("%s: scrubbed %q\n to %q\nwant %q", c.name, msg, got, want)
		}
	}
	for _, msg := range []string{
		"hunter\x1b[31m2 and s3cret in red",                // parts apart, visible text between
		`C:\\Users\\hunter2-s3 cret \u00e4 \x41`,           // escapes and a backslashed path
		"\x1b[1mbold\x1b[0m hunter2-\u200bs3 cret",         // invisibles, but no secret once left out
		`\ud83d alone, \uZZZZ, \x4, \0 and \ at the end \`, // escapes that are not whole
		"zone \u202eeu-1\u202c with \u00ad",
		"hunter2-s3\x08cret", // c written over 3: it shows "hunter2-scret"
	} {
		if got := csi.Scrubber([]string{s})(msg); got != msg {
			t.Errorf("scrubbed %q\n to %q, which holds no secret", msg, got)
		}
	}
}

// One predicate, spec.ShowsAsNothing (Unicode's default ignorables and the format characters),
// is what shownView leaves out and what its pre-check looks for the first byte of. Before, the
// view left out only Cf, so COMBINING GRAPHEME JOINER, the variation selectors and the Hangul
// filler (not Cf, shown as nothing) kept a secret apart; and the pre-check's hand-written table
// missed the first bytes 0xe0 and 0xf0, so a Cf character there (U+0890, U+1D173, U+1BCA0) was
// left in unless a backslash elsewhere in the message had the view made (review32a). Every
// character the predicate reports is tried.
func TestScrubFindsAValueWithAnythingShownAsNothingInside(t *testing.T) {
	const s = "hunter2-s3cret"
	sc := csi.Scrubber([]string{s})
	tried := 0
	for r := rune(0x80); r <= 0x10ffff; r++ {
		if !spec.ShowsAsNothing(r) || r > 0xe0000 && r < 0xe0fff && r%64 != 0 { // the tags' plane's: a few of its 4096, all begun by 0xf3
			continue
		}
		tried++
		msg := "token hunter2" + string(r) + "-s3cret rejected"
		if got := sc(msg); got != "token [REDACTED] rejected" {
			t.Errorf("U+%04X inside: scrubbed %+q to %+q", r, msg, got)
		}
	}
	for _, r := range []rune{0x034f, 0xfe0f, 0x3164, 0xe0100, 0x0890, 0x1d173, 0x1bca0, 0x115f, 0xffa0, 0xe0041} {
		if !spec.ShowsAsNothing(r) {
			t.Errorf("spec.ShowsAsNothing(U+%04X) = false: it shows as nothing", r)
		}
	}
	for _, r := range []rune{'a', 0xe9, 0x3042, 0x1f511, 0x0301, 0xa0} {
		if spec.ShowsAsNothing(r) {
			t.Errorf("spec.ShowsAsNothing(U+%04X) = true: it shows", r)
		}
	}
	if tried < 150 {
		t.Fatalf("%d characters tried: the predicate lost its ranges", tried)
	}
}

// What follows a secret and shows as nothing is not the secret's: a match in shownView's view
// ends where the source of its last byte ends. It ended at the next byte the view kept, so the
// colour's reset after a secret, a hyperlink after it, a zero width space, and after an OSC left
// open (a message cut short) all the rest of the message went into [REDACTED] (review32a).
func TestScrubKeepsWhatFollowsAShownValue(t *testing.T) {
	const s = "hunter2-s3cret"
	for _, c := range []struct{ msg, want string }{
		{"token \x1b[31mhunter2-s3cret\x1b[0m rejected", "token \x1b[31m[REDACTED]\x1b[0m rejected"},
		{`token \u001b[31mhunter2-s3cret\u001b[0m rejected`, `token \u001b[31m[REDACTED]\u001b[0m rejected`},
		{"token hunter2-s3cret\x1b]8;;http://x/\x07 is wrong: see the docs for the 'token' field", "token [REDACTED]\x1b]8;;http://x/\x07 is wrong: see the docs for the 'token' field"},
		{"token hunter2-s3cret\u200b, rejected", "token [REDACTED]\u200b, rejected"},
		{"token hun\x1b[1mter2-s3cret\x1b]0;title cut here, then the reason", "token [REDACTED]\x1b]0;title cut here, then the reason"},
		{`token hunter2-s3cre\u0074\u200b!`, `token [REDACTED]\u200b!`},
	} {
		if got := csi.Scrubber([]string{s})(c.msg); got != c.want {
			t.Errorf("scrubbed %+q\n to %+q\nwant %+q", c.msg, got, c.want)
		}
	}
}

// Escapes a terminal reads as nothing that shownView did not undo: tput sgr0's ESC ( B (an nF
// sequence), ESC 7 and ESC = (one byte after ESC outside 0x40..0x5F), DCS, APC, PM and SOS
// strings up to ST; Rust's Debug quoting (\u{1b}, \u{200b}) and Ruby's inspect (\e); and a
// backspace, over which a terminal writes the next character. Each kept the secret apart in
// the view while the terminal showed it whole (review32a).
func TestScrubFindsAValueThroughEveryEscapeATerminalReads(t *testing.T) {
	const s = "hunter2-s3cret"
	for _, c := range []struct{ name, echoed string }{
		{"tput sgr0 raw", "hunter2\x1b(B\x1b[m-s3cret"},
		{"tput sgr0 quoted", `hunter2\u001b(B\u001b[m-s3cret`},
		{"DECSC ESC 7", "hunter2\x1b7-s3cret"},
		{"keypad ESC =", "hunter2\x1b=-s3cret"},
		{"DCS string", "hunter2\x1bP1$r0m\x1b\\-s3cret"},
		{"APC string", "hunter2\x1b_anything at all\x1b\\-s3cret"},
		{"Rust Debug ANSI", `hunter2\u{1b}[31m-s3cret`},
		{"Rust Debug zero width space", `hunter2\u{200b}-s3cret`},
		{"Ruby inspect ANSI", `hunter2\e[31m-s3cret`},
		{"backspace overwrite", "hunter2-X\bs3cret"},
		{"backspaces, then written over", "hunter2-s3cXet\b\b\bret"},
		{"backspace over a character of two bytes", "hunter2-é\bs3cret"},
	} {
		msg := `stage failed: token "` + c.echoed + `" rejected`
		if got, want := csi.Scrubber([]string{s})(msg), `stage failed: token "[REDACTED]" rejected`; got != want {
			t.Errorf("%s: scrubbed %+q\n to %+q\nwant %+q", c.name, msg, got, want)
		}
	}
	// A backspace back to the start, the secret's first byte written last: the mask still
	// covers every byte that wrote it.
	msg := "token Xunter2-s3cret" + strings.Repeat("\b", 14) + "h\nrejected"
	if got := csi.Scrubber([]string{s})(msg); strings.Contains(got, "unter2") || !strings.HasSuffix(got, "\nrejected") {
		t.Errorf("scrubbed %+q to %+q", msg, got)
	}
}
