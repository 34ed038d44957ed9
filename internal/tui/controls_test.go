package tui

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// hostile is a plugin's or a spec's text meant for the terminal rather than the screen: an
// OSC 52 clipboard write, a window title, a screen clear, C1's CSI, a carriage return over the
// line and a newline to start one.
const hostile = "\x1b]52;c;cHduZWQ=\a\x1b]0;pwned\x07\x1b[2J\u009b31m\rX\nY"

// drawnControl returns the first character of a drawn screen a terminal would act on: a
// control character but the newlines between lines (the test renderer styles nothing, so no
// escape of volctl's own is there either), or a bidi control.
func drawnControl(s string) (rune, bool) {
	for _, r := range s {
		if r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || spec.IsBidiControl(r) {
			return r, true
		}
	}
	return 0, false
}

// TestDetailTitlesAndKeysAreCleaned plays a plugin whose volume_context keys (not only its
// values) carry escape sequences, a spec whose parameter keys do, and a volume and an alloc
// whose IDs hold a bidi override (ValidateID refuses control characters, not bidi
// formatting): the detail views' titles and key column are drawn as the rows are, cleaned.
func TestDetailTitlesAndKeysAreCleaned(t *testing.T) {
	const id = "db\u202e0-lov" // reads "db" then "vol-0" reversed
	fake := fixture()
	v := fake.volumes["mysql-0"]
	v.ID = id
	v.Context = map[string]string{"path" + hostile: "/srv" + hostile}
	v.Parameters = map[string]string{"tier" + hostile: "fast"}
	v.Claims = []engine.ClaimInfo{fake.data.Claims[0]}
	v.Claims[0].VolumeID, v.Claims[0].Alloc = id, "web\u202e[0]"
	fake.volumes = map[string]engine.VolumeInfo{id: v}
	fake.data.Volumes[0].ID = id
	fake.data.Claims[0].VolumeID, fake.data.Claims[0].Alloc = id, "web\u202e[0]"
	h := newHarness(t, fake, Options{})
	views := map[string]string{}
	h.keys("enter")
	views["volume detail"] = h.m.View()
	h.keys("G")
	views["volume detail, scrolled down"] = h.m.View()
	h.keys("esc", "2", "enter")
	views["claim detail"] = h.m.View()
	if !strings.Contains(views["volume detail, scrolled down"], "path") {
		t.Fatalf("the volume detail does not reach its context: the test tests nothing\n%s", views["volume detail, scrolled down"])
	}
	for what, out := range views {
		if r, ok := drawnControl(out); ok {
			t.Errorf("the %s draws %U raw to the terminal:\n%+q", what, r, out)
		}
	}
}

// TestReadErrorIsCleaned: the status line shows why the last read failed, in the error's own
// words, which may quote a path or a stored string: drawn cleaned, as the rows are.
func TestReadErrorIsCleaned(t *testing.T) {
	fake := fixture()
	h := newHarness(t, fake, Options{})
	fake.dashErr = errors.New("reading " + hostile)
	h.keys("r")
	out := h.m.View()
	if !strings.Contains(out, "read failed: reading") {
		t.Fatalf("the failed read is not shown: the test tests nothing\n%s", out)
	}
	if r, ok := drawnControl(out); ok {
		t.Errorf("the status line draws %U raw to the terminal:\n%+q", r, out)
	}
}

// TestInvisibleCharactersAreShown: a plugin's node ID or a volume's name holding a character
// that shows as nothing (a zero width space, a word joiner, a byte order mark, a soft hyphen)
// is drawn with it written out, "\u200b", as the command line writes it: blanked or raw, the
// node "n1\u200b" and the volume name "mysql\u2060" would read as "n1" and "mysql".
func TestInvisibleCharactersAreShown(t *testing.T) {
	fake := fixture()
	fake.data.Volumes[0].Name = "mysql\u2060"
	fake.data.Plugins[0].NodeID = "n1\u200b\ufeff\u00ad"
	h := newHarness(t, fake, Options{})
	h.send(sizeMsg(200))
	invisible := func(r rune) bool { return spec.IsInvisible(r) || strings.ContainsRune("\u200b\u2060\ufeff\u00ad", r) }
	if out := h.m.View(); strings.ContainsFunc(out, invisible) || !strings.Contains(out, `mysql\u2060`) {
		t.Errorf("the volume list does not show the name's word joiner as \\u2060:\n%+q", out)
	}
	h.keys("3", "enter")
	if out := h.m.View(); strings.ContainsFunc(out, invisible) || !strings.Contains(out, `n1\u200b\ufeff\u00ad`) {
		t.Errorf("the plugin's detail does not show its node ID's invisible characters written out:\n%+q", out)
	}
}

// TestCharactersOfNoAgreedWidthAreCleaned: the layout measures each cell's width and pads the
// line to the screen's; a character whose width terminals do not agree on makes the line a
// cell longer on the screen than measured, and the terminal wraps it, moving every line under
// it. clean let through LINE and PARAGRAPH SEPARATOR (measured 0 cells, drawn as 1 by
// wcwidth's terminals), the format characters it did not name (Unicode's tags, which also
// spell invisible text after a name, "n1" reading as "n1" with "EVIL" hidden behind it; the
// interlinear annotations), and bytes that are not UTF-8 (a lone 0x9b is C1's CSI to a
// terminal that takes 8-bit controls). Now the separators are blanked as line breaks are, the
// format characters written as escapes, as the invisibles are, and bad bytes as U+FFFD; the
// joiners and the bidi marks, which shape text, are left alone.
func TestCharactersOfNoAgreedWidthAreCleaned(t *testing.T) {
	tags := "n1\U000E0045\U000E0056\U000E0049\U000E004C" // "n1" and "EVIL" in tags
	for _, tt := range []struct{ in, want string }{
		{"a\u2028b\u2029c", "a b c"},
		{tags, `n1\U000e0045\U000e0056\U000e0049\U000e004c`},
		{"x\ufff9ruby\ufffbx", `x\ufff9ruby\ufffbx`},
		{"a\x9b31mb\xff", "a\ufffd31mb\ufffd"},
		{"👩\u200d👩", "👩\u200d👩"},                                 // ZWJ: an emoji sequence
		{"ab\u200ecd\u200fef\u061c", "ab\u200ecd\u200fef\u061c"}, // bidi marks
		{"café", "café"},
	} {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}

	fake := fixture()
	fake.data.Plugins[0].NodeID = tags
	fake.data.Events[0].Message = "a\u2028b\x9b31m" + tags
	fake.data.Claims[4].LastError = "busy\u2029\xff"
	h := newHarness(t, fake, Options{})
	for _, keys := range [][]string{{"2"}, {"enter"}, {"esc", "3"}, {"enter"}, {"esc", "4"}, {"enter"}} {
		h.keys(keys...)
		out := h.m.View()
		if !utf8.ValidString(out) {
			t.Errorf("after %v the screen is not UTF-8: %q", keys, out)
		}
		for _, r := range out {
			if unicode.In(r, unicode.Zl, unicode.Zp) || unicode.Is(unicode.Cf, r) && !strings.ContainsRune("\u200c\u200d\u200e\u200f\u061c", r) {
				t.Errorf("after %v the screen holds %U, of no agreed width:\n%s", keys, r, out)
				break
			}
		}
	}
}
