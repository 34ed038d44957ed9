package csi

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/spec"
)

// minScrubLen is the shortest value scrubbed wherever it is. A value of one or two bytes is
// not: a mount flag that short ("ro", "rw") carries no credential, and replacing every "ro" or
// "1" in a message would shred it past reading, while the markers' places would spell the
// value out anyway ("[REDACTED]l-1" for a secret "vo" in "vol-1"); its encodings ("726f",
// "cm8=") are as short and as common. A secret that short, sent in a request, is scrubbed
// from the plugin's answer to that request where it stands as a word of its own (scrubWords):
// how a plugin echoes a value (`secret "ab" rejected`, `key=ab`), and rare enough in other
// text to cost the message little. Spec validation does not refuse such secrets (CSI allows
// them, Nomad reads them, and real plugins take short flags in their secrets); it warns that
// they are scrubbed only so.
const minScrubLen = spec.MinScrubLen

// shortSecrets are the secret values of req (not its mount flags) too short for scrub.
func shortSecrets(req proto.Message) []string {
	if req == nil {
		return nil
	}
	var out []string
	for _, v := range requestValues(req, false) {
		if v != "" && len(v) < minScrubLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// scrubWords replaces each occurrence of a value in msg that is a word of its own: neither
// byte beside it a letter, a digit, '_' or part of a non-ASCII character.
func scrubWords(msg string, values []string) string {
	for _, v := range values {
		for i := 0; i+len(v) <= len(msg); {
			j := strings.Index(msg[i:], v)
			if j < 0 {
				break
			}
			from, to := i+j, i+j+len(v)
			if (from == 0 || !wordByte(msg[from-1])) && (to == len(msg) || !wordByte(msg[to])) {
				msg = msg[:from] + spec.Redacted + msg[to:]
				i = from + len(spec.Redacted)
				continue
			}
			i = from + 1
		}
	}
	return msg
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// scrub replaces every sensitive value found in msg, in every form a plugin might echo it in:
// as it is; quoted by Go, by protobuf's text form or by JSON (quotes, backslashes and control
// characters escaped), by protobuf's text form in C++ and Python (apostrophes escaped too,
// control and non-ASCII bytes as octal: cEscape) or by Python's repr of it encoded
// (pyBytesRepr); quoted for a shell where it holds an apostrophe (as volctl's advice quotes
// it: shellquote.Arg); percent-encoded, as in a URL the plugin built (any of its parts, digits
// of either case, '+' for a space); hex (either case); base64 in the standard and URL alphabets,
// padded or not, on its own or inside a longer base64 text (appendEncodedForms); any of those
// broken into lines, as MIME, PEM and base64 tools write base64, or a quoted dump of that
// (unwrappedView); as it reads once a quoting's escapes are undone and what shows as nothing (an
// ANSI sequence, a zero width space, a control byte) is left out (shownView). Where occurrences
// overlap (a value that contains another, values that share a stretch, a percent-encoded value
// around one as it is), the whole stretch they cover becomes one marker, so no part of either
// is left shown. A value of spec.MinFoldLen bytes or more is found in any case of its ASCII
// letters, as it is and quoted, and encoded as its upper- and lower-cased forms are (folds);
// one of spec.MinFoldLen characters or more upper- and lower-cased whole beyond ASCII too
// (unicodeCases). Not covered: a shorter value in another case, a value reversed or split across fields, other encodings (base32, HTML entities, double percent-encoding,
// hex with separators), a value split across lines other than between two base64 characters,
// one transformed before it was encoded (compressed, encrypted, hashed), and what
// appendEncodedForms leaves of base64.
func scrub(msg string, sensitive []string) string { return Scrubber(sensitive)(msg) }

// Scrubber is scrub with the forms of the values worked out once, for many texts: the engine
// scrubs with it what it prints of data a plugin returned (engine.Redactor).
func Scrubber(sensitive []string) func(string) string {
	sc := newScrubber(sensitive)
	return sc.scrub
}

// newScrubber works out the forms of the sensitive values (Scrubber).
func newScrubber(sensitive []string) *scrubber {
	sc := &scrubber{}
	seen := make(map[string]bool, len(sensitive))
	// The folds kept so far, by value: looked up in the list, each value's folds cost a walk
	// of every value's before it, the build for 16,000 distinct secret values (a state whose
	// volumes each have their own) 358–380 ms against 52–81 ms (BenchmarkScrubberBuild).
	folded := map[string]bool{}
	for _, s := range sensitive {
		if len(s) < minScrubLen || seen[s] {
			continue
		}
		seen[s] = true
		from := len(sc.forms)
		sc.forms = append(sc.forms, s)
		if needsQuoting(s) {
			for _, q := range []string{strconv.Quote(s), strconv.QuoteToASCII(s), jsonQuote(s), jsonQuoteNoHTML(s)} {
				sc.forms = append(sc.forms, q[1:len(q)-1])
			}
		}
		if needsCEscape(s) {
			sc.forms = append(sc.forms, cEscape(s, false), cEscape(s, true), pyBytesRepr(s))
		}
		if caret, ok := caretNotation(s); ok {
			sc.forms = append(sc.forms, caret)
		}
		if strings.IndexByte(s, '\'') >= 0 {
			// Quoted for a shell, as every command volctl advises is (shellquote.Arg): each
			// quote closes the quoting, is written escaped and opens it again, and no stretch of
			// it was the value (an echoed secret shown in a `--node-id` advised:
			// TestExportNomadNodeIDRefusalShowsNoSecretEchoedIntoTheTopology); the other common
			// spelling too.
			sc.forms = append(sc.forms, strings.ReplaceAll(s, "'", `'\''`), strings.ReplaceAll(s, "'", `'"'"'`))
		}
		// A value of spec.MinFoldLen bytes or more is found in any case of its ASCII letters as
		// it is and as quoted (folds), and encoded as its upper- and lower-cased forms are: a
		// plugin that upper-cases what it echoes ("PASSWORD=HUNTER2-LONGER"), or base64 of that,
		// shows the secret to whoever reads it.
		cased := foldable(s)
		if cased {
			for _, f := range sc.forms[from:] {
				if f = asciiLower(f); !folded[f] {
					folded[f] = true
					sc.folds = append(sc.folds, f)
				}
			}
			// Its letters beyond ASCII upper- and lower-cased as Unicode, ICU and the Turkish
			// locale do, as they are and with every non-ASCII letter escaped (recheck39b).
			for _, c := range unicodeCases(s) {
				for _, f := range []string{c, strings.Trim(strconv.QuoteToASCII(c), `"`)} {
					if f = asciiLower(f); !folded[f] {
						folded[f] = true
						sc.folds = append(sc.folds, f)
					}
				}
			}
		}
		sc.forms = appendEncodedForms(sc.forms, s)
		if cased {
			for _, c := range []string{asciiUpper(s), asciiLower(s)} {
				if c != s {
					sc.forms = appendEncodedForms(sc.forms, c)
				}
			}
		}
		// The forms of one value that are the same (its quoted forms, when quoting changes only
		// part of them; base64 and its raw form, when no padding is needed) are looked for once.
		kept := sc.forms[from:from]
		for _, f := range sc.forms[from:] {
			if !slices.Contains(kept, f) {
				kept = append(kept, f)
			}
		}
		sc.forms = sc.forms[:from+len(kept)]
		// A query string writes a space as '+': only a value with a space needs that decoding.
		sc.space = sc.space || strings.IndexByte(s, ' ') >= 0
		// A control byte (but a line feed, which a drawing spells as its rows' break, and ESC)
		// is found through escapes only as the decoded string holds it (controlsKept).
		sc.controls = sc.controls || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != 0x1b || r == 0x7f })
		sc.esc = sc.esc || strings.IndexByte(s, 0x1b) >= 0
	}
	sc.ends = make([][2]uint16, len(sc.forms))
	for i, f := range sc.forms {
		sc.ends[i] = [2]uint16{trigram(f, 0), trigram(f, len(f)-3)}
	}
	sc.foldEnds = make([][2]uint16, len(sc.folds))
	for i, f := range sc.folds {
		sc.foldEnds[i] = [2]uint16{trigram(f, 0), trigram(f, len(f)-3)}
	}
	return sc
}

// foldable reports whether s is found in any case of its ASCII letters (spec.MinFoldLen), and
// upper- and lower-cased beyond ASCII (unicodeCases): long enough, and with a letter to change.
func foldable(s string) bool {
	return len(s) >= spec.MinFoldLen && strings.ContainsFunc(s, func(r rune) bool {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || casedBeyondASCII(r)
	})
}

// casedBeyondASCII reports whether r is a letter beyond ASCII that a plugin may write in
// another case (ß: SS upper-cased by Python and ICU).
func casedBeyondASCII(r rune) bool {
	return r >= utf8.RuneSelf && (unicode.ToUpper(r) != r || unicode.ToLower(r) != r || r == 'ß')
}

// unicodeCases are s upper- and lower-cased by the rules a plugin may use beyond ASCII's, for
// a value of spec.MinFoldLen characters or more with a letter that has a case outside ASCII, or
// an i (the Turkish locale's): Unicode's (Go's strings.ToUpper keeps ß, Python's and ICU's make
// it SS) and the Turkish locale's (Java's toUpperCase() under tr_TR: "i" becomes "İ", "I"
// becomes "ı"). A value spelt in a case of its own letter by letter (title case, swapped
// case) beyond ASCII is not among them.
func unicodeCases(s string) []string {
	if utf8.RuneCountInString(s) < spec.MinFoldLen || !strings.ContainsFunc(s, func(r rune) bool {
		return r == 'i' || r == 'I' || casedBeyondASCII(r)
	}) {
		return nil
	}
	up := strings.ToUpper(s)
	return []string{up, strings.ReplaceAll(up, "ß", "SS"), strings.ToLower(s),
		strings.ToUpperSpecial(unicode.TurkishCase, s), strings.ToLowerSpecial(unicode.TurkishCase, s)}
}

// asciiLower is s with its ASCII letters in lower case, each byte where it was (so an offset
// into it is one into s).
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// asciiUpper is s with its ASCII letters in upper case, each byte where it was.
func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// scrubber holds the forms of the values to find, and the hashes of each one's first and last
// three bytes (every form has at least three).
type scrubber struct {
	forms []string
	ends  [][2]uint16
	// folds are the forms found in any case of their ASCII letters (lower-cased: foldable
	// values as they are and quoted), looked for in the text lower-cased
	folds    []string
	foldEnds [][2]uint16
	space    bool // a value has a space, which a query string writes as '+'
	// controls: a value has a control byte a drawing does not spell (a tab, a carriage return)
	controls bool
	// esc: a value has ESC, which a drawing reads as beginning a sequence (controlsKeptAll)
	esc bool
}

func (sc *scrubber) scrub(msg string) string { return sc.scrubCut(msg, false) }

// scrubPluginMessage is scrub of a plugin's own message, which the plugin may have cut itself
// in the middle of a value it echoes (findAtOwnCuts).
func scrubPluginMessage(msg string, sensitive []string) string {
	sc := newScrubber(sensitive)
	return sc.scrubCut(msg, true)
}

// scrubCut is scrub, and with own, of a value cut short where a plugin cuts its own message
// too (findAtOwnCuts).
func (sc *scrubber) scrubCut(msg string, own bool) string {
	spans := sc.find(nil, msg, nil, nil, nil)
	// Percent-encoded forms are found by decoding the message, not by listing encodings:
	// which characters a URL escapes depends on the part and on the library.
	if strings.IndexByte(msg, '%') >= 0 {
		if view, at := percentView(msg, false); at != nil {
			spans = sc.find(spans, view, at, nil, nil)
		}
	}
	if sc.space && strings.IndexByte(msg, '+') >= 0 {
		if view, at := percentView(msg, true); at != nil {
			spans = sc.find(spans, view, at, nil, nil)
		}
	}
	// A value with an escape (\u0068, \x1b) or with what shows as nothing (an ANSI escape
	// sequence, a zero width space, a control byte) written into it is found as it reads.
	if shownDiffers(msg) {
		var back bool
		spans, back = sc.findShown(spans, msg, controlsEscaped)
		// An escaped control byte (\b, \r, \t, \n, JSON's and Go's): read too as a reader
		// decoding the string draws it, the cursor moved ("hunter2-X\bs3cret"); the view
		// above kept it as written, where a value with a tab or a line break is found quoted.
		if drawsControlEscapes(msg, back) {
			spans, _ = sc.findShown(spans, msg, controlsDrawn)
		}
		// A value with a control byte in it (a tab, a carriage return) is found too as the
		// decoded string holds it, which no drawing spells ("pass\u0009word").
		if sc.controls {
			spans, _ = sc.findShown(spans, msg, controlsKept)
		}
		if sc.esc {
			spans, _ = sc.findShown(spans, msg, controlsKeptAll)
		}
		// What --json, the event log and a file carry: the sequences between a value's parts
		// are no part of what a reader reads there, wherever a terminal would move the cursor.
		if view, at := sequencesSkipped(msg); at != nil {
			sc.findSkipped(&spans, msg, view, at)
		}
	}
	// Base64 or hex broken into lines (MIME, PEM, a dump's quoted "\n") is found joined again.
	if strings.ContainsAny(msg, "\n\r\\") {
		if view, cuts := unwrappedView(msg); cuts != nil {
			spans = sc.find(spans, view, nil, cuts, nil)
		}
	}
	spans = sc.findAtCuts(spans, msg)
	if own {
		spans = sc.findAtOwnCuts(spans, msg)
		spans = sc.findAtOwnStarts(spans, msg)
	}
	if len(spans) == 0 {
		return msg
	}
	return redactSpans(msg, spans)
}

// findShown appends the values found in msg's shown view (shownView, controls so read), and, when
// msg holds something terminals draw two ways (a C1 control or a right-to-left override, a
// screen move or edit, an ambiguous-width character or an emoji made wide by VS16, each of the
// latter two when the cursor moves back: reading), in the view of every combination of those
// readings (a CSI begun by U+009B, the text after U+202E reversed, the screen scrolled or
// erased, two columns for the character). A match ends where its last byte's source ends:
// what follows it and shows as nothing (a colour's reset, a hyperlink, a zero width space) is
// not the value's. back is shownView's, in any reading.
func (sc *scrubber) findShown(spans []span, msg string, controls controlsShown) (_ []span, back bool) {
	view, at, others, back := drawnView(msg, 0, controls)
	// A value drawn by a move back is masked with what drew in its columns first, which the
	// drawing is made again to say (draw's firsts): rare, paid by such a find alone.
	bounds := func(view string, at []int, rd reading) func(from, to int) (int, int) {
		var firsts []int
		first := func() []int {
			if firsts == nil {
				_, _, firsts, _, _ = draw(msg, rd, controls, true)
			}
			return firsts
		}
		return func(from, to int) (int, int) { return shownBounds(msg, view, at, from, to, controls, first) }
	}
	// A drawn view is looked in as drawn, and with its rows of base64 joined again
	// (unwrappedView): a vertical tab, a form feed, CUD or IND draws "hunter2-" and, a row
	// down, "        s3cret", which is the same text written with a line feed is.
	look := func(view string, at []int, rd reading) {
		b := bounds(view, at, rd)
		spans = sc.find(spans, view, at, nil, b)
		if strings.IndexByte(view, '\n') < 0 {
			return
		}
		if joined, cuts := unwrappedView(view); cuts != nil {
			spans = sc.find(spans, joined, nil, nil, func(from, to int) (int, int) {
				return b(joinedAt(cuts, from), joinedAt(cuts, to-1)+1)
			})
		}
	}
	if at != nil {
		look(view, at, 0)
	}
	// A character's width changes nothing drawn unless the cursor goes back over it. A
	// reading may find more to differ on (a C1 CSI that is an ED): looked in too.
	widths := readAmbiguousWide | readEmojiWide
	var drawn [readings]bool
	drawn[0] = true
	for more := true; more; {
		more = false
		if !back {
			others &^= widths
		}
		for rd := reading(1); rd < readings; rd++ {
			// A width read wide is a terminal's, which draws the screen's moves and edits: the
			// reading that does not draw them keeps what it found before, narrow (10 drawings at
			// most, not 16).
			if drawn[rd] || rd&^others != 0 || rd&widths != 0 && others&readScreen != 0 && rd&readScreen == 0 {
				continue
			}
			drawn[rd], more = true, true
			view, at, found, drawnBack := drawnView(msg, rd, controls)
			if at != nil {
				look(view, at, rd)
			}
			others |= found
			back = back || drawnBack
		}
	}
	return spans, back
}

// findSkipped appends the values found in view, msg with its escape sequences left out
// (sequencesSkipped), and in view with its rows of base64 joined (unwrappedView), as findShown
// looks in a drawn view. A match ends where its last byte's source ends.
func (sc *scrubber) findSkipped(spans *[]span, msg, view string, at []int) {
	bounds := func(from, to int) (int, int) { return at[from], shownEnd(msg, at[to-1], controlsEscaped) }
	*spans = sc.find(*spans, view, at, nil, bounds)
	if !strings.ContainsAny(view, "\n\r") {
		return
	}
	if joined, cuts := unwrappedView(view); cuts != nil {
		*spans = sc.find(*spans, joined, nil, nil, func(from, to int) (int, int) {
			return bounds(joinedAt(cuts, from), joinedAt(cuts, to-1)+1)
		})
	}
}

// sequencesSkipped is msg with its escapes undone (unescaped, ESC as cat -v's ^[ too) and each
// escape sequence (escapeSeq: begun by ESC, or by a C1 control as UTF-8) left out (one that
// moves along the line read as a blank), every other byte kept as it is: the message as whoever reads its bytes reads it, in the --json's string,
// the event log, the agent's log or a file, where a sequence is no character of the text around
// it. A plugin that echoes "hunter2-" ESC [ A "s3cret" has a terminal draw "s3cret" a row above
// "hunter2-", two rows no drawn view joins (the secret's second half first), while every
// reader of those bytes reads the secret with a sequence inside it; so too CUU's kin (RI, IL)
// and a move that draws the halves far apart (recheck37:
// TestScrubSkipsTheSequencesBetweenASecretsParts; before, masked when the sequence was CUD
// or SGR, shown when it was CUU). at[i] is the offset in msg of what became the view's byte
// i, at[len(view)] is len(msg); at is nil when msg holds no sequence.
func sequencesSkipped(msg string) (view string, at []int) {
	if !holdsSequence(msg) {
		return "", nil
	}
	d, dat := unescaped(msg, false)
	moves := false // a sequence other than those that draw nothing and move nothing
	var b []byte
	for i := 0; i < len(d); {
		if c := d[i]; c == 0x1b || c == 0xc2 && i+1 < len(d) && d[i+1] >= 0x80 && d[i+1] <= 0x9f {
			n, csi, final, _ := escapeSeq(d[i:])
			moves = moves || !quietSequence(d[i:], csi, final)
			if b == nil {
				b, at = make([]byte, 0, len(d)), make([]int, 0, len(d)+1)
				b, at = append(b, d[:i]...), append(at, dat[:i]...)
			}
			if csi && strings.IndexByte("CaGI`", final) >= 0 {
				// A move along the line (CUF, HPR, CHA, CHT, HPA) draws blanks between what is
				// before and after it, as spaces would: a blank, not nothing
				// (TestScrubFindsAValueAsATerminalDrawsIt's "moved forward past the end").
				b, at = append(b, ' '), append(at, dat[i])
			}
			i += n
			continue
		}
		if b != nil {
			b, at = append(b, d[i]), append(at, dat[i])
		}
		i++
	}
	if b == nil || !moves && !bytes.Contains(b, []byte("\r")) && !bytes.Contains(b, []byte(`\r`)) {
		// Colours, hyperlinks, titles and charsets alone: the drawn view is this one already,
		// but for a carriage return, which it draws and this view keeps, to be joined as a
		// line break ("hunter2-\x1b[0m\rs3cret", a colour reset before it).
		return "", nil
	}
	return string(b), append(at, len(msg))
}

// quietSequence says whether the escape sequence at the start of s (escapeSeq's csi and
// final) draws nothing and moves nothing, so that the drawn view (findShown) leaves it out
// as sequencesSkipped does: SGR (a colour), a string (OSC's hyperlink or title, DCS, SOS, PM,
// APC) or an nF sequence (a character set designated).
func quietSequence(s []byte, csi bool, final byte) bool {
	if csi {
		return final == 'm'
	}
	if len(s) < 2 {
		return false
	}
	kind := s[1]
	if s[0] == 0xc2 {
		return kind == 0x9d || kind == 0x90 || kind == 0x98 || kind == 0x9e || kind == 0x9f
	}
	return strings.IndexByte("]PX^_", kind) >= 0 || kind >= 0x20 && kind <= 0x2f
}

// holdsSequence says whether msg may begin an escape sequence once its escapes are undone
// (sequencesSkipped): ESC or a C1 control's lead raw, ESC as ^[, or an escape that stands for
// one ("\u001b", "\x1b", "\e", "\u009b"). Most messages with a backslash hold none: a quoted
// string's \" and \n cost this scan, not the view.
func holdsSequence(msg string) bool {
	if strings.IndexByte(msg, 0x1b) >= 0 || strings.IndexByte(msg, 0xc2) >= 0 || strings.Contains(msg, "^[") {
		return true
	}
	var buf [8]byte
	for i := strings.IndexByte(msg, '\\'); i >= 0; {
		if d, n := unescape(buf[:0], msg[i:], false); n > 0 && (bytes.IndexByte(d, 0x1b) >= 0 || bytes.IndexByte(d, 0xc2) >= 0) {
			return true
		}
		j := strings.IndexByte(msg[i+1:], '\\')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// cutMark begins what spec.Cut writes where it cut a text: "… (1044480 bytes more)".
const cutMark = "… ("

// cutMarkEscaped is cutMark as an ASCII quoting writes it (%+q, spec.HCLQuotedASCII): an error
// quoting a cut ID so hid the mark, and the head of a secret before it was shown
// (TestNearStorageRefusalShowsNoPartOfACutSecret).
const cutMarkEscaped = `\u2026 (`

// findAtCuts appends, at each place msg says it was cut (spec.Cut's mark), the longest stretch
// before the mark, of at least minScrubLen bytes, that begins one of the forms: a value cut
// there, whose whole form no scrub finds any more. Text from outside volctl is to be scrubbed
// before it is cut, but an error quoting a plugin's answer cut (its ID, a node ID) is scrubbed
// with the state's secrets only when the command line prints it, after the cut
// (TestCreateAnsweredWithAnIDHoldingASecretShowsNoPartOfIt).
func (sc *scrubber) findAtCuts(spans []span, msg string) []span {
	for _, mark := range []string{cutMark, cutMarkEscaped} {
		for i := 0; ; {
			j := strings.Index(msg[i:], mark)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(mark)
			if !cutMarkAt(msg[i:]) {
				continue
			}
			spans = sc.appendCutAt(spans, msg, at, false)
		}
	}
	return spans
}

// appendCutAt appends the longest stretch of msg ending at at, of at least minScrubLen bytes,
// that begins one of the forms: a value cut there. With word, only a stretch that begins a
// word (no letter, digit, '_' or non-ASCII byte before it) is: where no mark says a value was
// cut, the end of an honest word ("ser" of "server" before a mount flag "vers=4.1") is not.
func (sc *scrubber) appendCutAt(spans []span, msg string, at int, word bool) []span {
	longest := 0
	for _, f := range sc.forms {
		// From the farthest start a cut form may have, to the nearest: the first whose
		// stretch up to the mark begins f is the longest. Starts are where f's first byte is.
		for p := at - min(len(f)-1, at); p <= at-max(minScrubLen, longest+1); p++ {
			k := strings.IndexByte(msg[p:at-minScrubLen+1], f[0])
			if k < 0 {
				break
			}
			p += k
			if word && p > 0 && wordByte(msg[p-1]) {
				continue
			}
			if at-p > longest && strings.HasPrefix(f, msg[p:at]) {
				longest = at - p
				break
			}
		}
	}
	if longest > 0 {
		spans = append(spans, span{at - longest, at})
	}
	return spans
}

// maxOwnCuts is how many ellipses of a plugin's message findAtOwnCuts looks before: a plugin
// that cuts what it quotes cuts it once or twice; each look costs a pass over the forms.
const maxOwnCuts = 8

// ownCutClosers are what may follow a value a plugin cut at the end of its message: the
// quote, bracket or full stop that closed what it quoted, white space.
const ownCutClosers = " \t\r\n\"'`)]}>.,;:!"

// findAtOwnCuts appends, where a plugin may have cut its own message (a Go %.40s, a Python
// msg[:40], a backend's answer quoted truncated): at the message's end, past what closes a
// quote (ownCutClosers), and before each of its first maxOwnCuts ellipses ("..." or "…"),
// the longest stretch of at least minScrubLen bytes that begins a word and one of the forms,
// as findAtCuts does at spec.Cut's mark. Before, "token=s3cr3t-SENTINEL-47" was shown, a secret
// but for its last two bytes (TestPluginMessageCutByThePluginInASecretShowsNoPartOfIt).
func (sc *scrubber) findAtOwnCuts(spans []span, msg string) []span {
	if len(sc.forms) == 0 {
		return spans
	}
	end := len(strings.TrimRight(msg, ownCutClosers))
	for strings.HasSuffix(msg[:end], "…") {
		end = len(strings.TrimRight(msg[:end-len("…")], ownCutClosers))
	}
	if end >= minScrubLen {
		spans = sc.appendCutAt(spans, msg, end, true)
	}
	for at := range ownEllipses(msg) {
		if at >= minScrubLen {
			spans = sc.appendCutAt(spans, msg, at, true)
		}
	}
	for at := range ownCutMarks(msg) {
		if at >= minScrubLen {
			spans = sc.appendCutAt(spans, msg, at, true)
		}
	}
	return spans
}

// ownCutMarks yields, for each of msg's first maxOwnCuts words of a cut in brackets ("(truncated)",
// "[output truncated]", "<truncated 120 bytes>": "truncat" in any case, within a bracket of at
// most 64 bytes), where the blanks before it begin and where the blanks after it end: the
// places findAtOwnCuts and findAtOwnStarts look for a plugin's own cut, as at an ellipsis
// (scrub36; before, "token=hunter2-s3 (truncated)" showed the secret's head, and
// "...(truncated) r2-s3cret rejected" its tail).
func ownCutMarks(msg string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		n := 0
		for i := 0; i < len(msg) && n < maxOwnCuts; {
			j := indexFold(msg[i:], "truncat")
			if j < 0 {
				return
			}
			at := i + j
			i = at + len("truncat")
			open := strings.LastIndexAny(msg[max(0, at-64):at], "([{<")
			if open < 0 {
				continue
			}
			open += max(0, at-64)
			closeAt := strings.IndexAny(msg[i:min(len(msg), open+64)], ")]}>")
			if closeAt < 0 || strings.ContainsAny(msg[open+1:at], ")]}>") {
				continue
			}
			end := i + closeAt + 1
			n++
			if !yield(len(strings.TrimRight(msg[:open], " \t")), skipBlanks(msg, end)) {
				return
			}
			i = end
		}
	}
}

// indexFold is strings.Index of the lower-case ASCII word in s, in any case of its letters.
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		k := strings.IndexAny(s[i:len(s)-len(word)+1], word[:1]+strings.ToUpper(word[:1]))
		if k < 0 {
			return -1
		}
		i += k
		if strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

// ownEllipses yields where each of msg's first maxOwnCuts ellipses ("..." or "…") begins and
// where it ends: the places findAtOwnCuts and findAtOwnStarts look for a plugin's own cut.
func ownEllipses(msg string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i, n := 0, 0; n < maxOwnCuts; n++ {
			j := strings.IndexAny(msg[i:], ".…")
			if j < 0 {
				return
			}
			at := i + j
			switch {
			case strings.HasPrefix(msg[at:], "..."):
				i = at + len("...")
			case strings.HasPrefix(msg[at:], "…"):
				i = at + len("…")
			default:
				i, n = at+1, n-1 // a lone full stop is no ellipsis
				continue
			}
			if !yield(at, i) {
				return
			}
		}
	}
}

// ownStartOpeners are what may come before a value a plugin cut at the start of its message:
// white space, the quote or bracket that opened what it quoted.
const ownStartOpeners = " \t\r\n\"'`([{<"

// findAtOwnStarts is findAtOwnCuts at the other end of what a plugin cut: where a plugin may
// have kept the end of a text alone (the tail of a mount helper's stderr, "..." + out[-40:],
// the rest of a message split across two errors), at the message's start past what opens a
// quote and an ellipsis, and after each of its first maxOwnCuts ellipses, the longest stretch
// of at least minScrubLen bytes that ends a word and one of the forms, the form's start cut
// off. Before, "…r2-s3cret rejected" showed all of a secret but its first bytes, and a secret
// split across a first error ending "token=hunter2-" (masked: findAtOwnCuts) and its retry's
// beginning "s3cret rejected" showed its second half.
func (sc *scrubber) findAtOwnStarts(spans []span, msg string) []span {
	if len(sc.forms) == 0 {
		return spans
	}
	start := 0
	for {
		start = len(msg) - len(strings.TrimLeft(msg[start:], ownStartOpeners))
		n := 0
		switch {
		case strings.HasPrefix(msg[start:], "…"):
			n = len("…")
		case strings.HasPrefix(msg[start:], "..."):
			n = len("...")
		}
		if n == 0 {
			break
		}
		start += n
	}
	spans = sc.appendStartAt(spans, msg, start)
	for _, after := range ownEllipses(msg) {
		if after > start {
			spans = sc.appendStartAt(spans, msg, after)
		}
	}
	for _, after := range ownCutMarks(msg) {
		spans = sc.appendStartAt(spans, msg, after)
	}
	return spans
}

// appendStartAt appends the longest stretch of msg beginning at at, of at least minScrubLen
// bytes and ending a word (no letter, digit, '_' or non-ASCII byte after it), that ends one of
// the forms and is not the whole of it (which find finds): a value whose start was cut off.
func (sc *scrubber) appendStartAt(spans []span, msg string, at int) []span {
	if at >= len(msg) {
		return spans
	}
	longest := 0
	for _, f := range sc.forms {
		// From the form's second byte on, the first place the stretch may begin f's tail at
		// gives the longest tail.
		for k := 1; len(f)-k >= max(minScrubLen, longest+1); k++ {
			j := strings.IndexByte(f[k:len(f)-minScrubLen+1], msg[at])
			if j < 0 {
				break
			}
			k += j
			n := len(f) - k
			if n <= longest || at+n > len(msg) {
				continue
			}
			if msg[at:at+n] == f[k:] && (at+n == len(msg) || !wordByte(msg[at+n])) {
				longest = n
				break
			}
		}
	}
	if longest > 0 {
		spans = append(spans, span{at, at + longest})
	}
	return spans
}

// cutMarkAt says whether rest, what follows cutMark, ends spec.Cut's mark: digits, then " bytes more)".
func cutMarkAt(rest string) bool {
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	return digits > 0 && strings.HasPrefix(rest[digits:], " bytes more)")
}

// find appends every occurrence in text of every form, overlapping ones too. at maps text's
// offsets to the message's (nil: text is the message); with bounds, an occurrence of text's
// from..to-1 is the stretch of the message bounds gives, which ends where the source of its
// last byte ends, not at the next byte kept (shownView's, which leaves out what shows as
// nothing: shownBounds); with cuts, text is the message with
// stretches left out (unwrappedView), and an occurrence ends after its last byte, not before
// the next byte kept. A form whose first or last three bytes text does not hold anywhere is not
// looked for: most forms, in most messages.
func (sc *scrubber) find(spans []span, text string, at []int, cuts []cut, bounds func(from, to int) (int, int)) []span {
	var held, heldLower trigrams
	for i := 0; i+3 <= len(text); i++ {
		held.add(trigram(text, i))
	}
	for k, f := range sc.forms {
		if !held.has(sc.ends[k][0]) || !held.has(sc.ends[k][1]) {
			continue
		}
		spans = appendFound(spans, text, f, at, cuts, bounds)
	}
	if len(sc.folds) == 0 || len(text) < spec.MinFoldLen {
		return spans
	}
	// The folds, in the text lower-cased: the same bytes at the same offsets but its letters.
	for i := 0; i+3 <= len(text); i++ {
		heldLower.add(trigramLower(text, i))
	}
	var lower string
	for k, f := range sc.folds {
		if !heldLower.has(sc.foldEnds[k][0]) || !heldLower.has(sc.foldEnds[k][1]) {
			continue
		}
		if lower == "" {
			lower = asciiLower(text)
		}
		spans = appendFound(spans, lower, f, at, cuts, bounds)
	}
	return spans
}

// trigramLower is trigram of s[i:i+3] with its ASCII letters lower-cased.
func trigramLower(s string, i int) uint16 {
	b := [3]byte{s[i], s[i+1], s[i+2]}
	for k, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[k] = c + 'a' - 'A'
		}
	}
	x := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
	return uint16(x * 0x9e3779b1 >> 20)
}

// appendFound appends every occurrence of f in text, overlapping ones too, as find says.
func appendFound(spans []span, text, f string, at []int, cuts []cut, bounds func(from, to int) (int, int)) []span {
	for i := 0; ; {
		j := strings.Index(text[i:], f)
		if j < 0 {
			return spans
		}
		from, to := i+j, i+j+len(f)
		switch {
		case cuts != nil:
			from, to = joinedAt(cuts, from), joinedAt(cuts, to-1)+1
		case bounds != nil:
			from, to = bounds(from, to)
		case at != nil:
			from, to = at[from], at[to]
		}
		spans = append(spans, span{from, to})
		i += j + 1
	}
}

// trigrams is a set of hashes of three-byte strings, which may hold some not added.
type trigrams [4096 / 64]uint64

func (t *trigrams) add(h uint16)      { t[h/64] |= 1 << (h % 64) }
func (t *trigrams) has(h uint16) bool { return t[h/64]&(1<<(h%64)) != 0 }

// trigram hashes s[i:i+3] into 12 bits.
func trigram(s string, i int) uint16 {
	x := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16
	return uint16(x * 0x9e3779b1 >> 20)
}

// needsQuoting reports whether Go's or JSON's quoting changes s: a control, non-ASCII, quote,
// backslash or HTML character in it.
func needsQuoting(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

// needsCEscape reports whether cEscape changes s: a control, non-ASCII, quote, apostrophe or
// backslash in it.
func needsCEscape(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\' {
			return true
		}
	}
	return false
}

// cEscape is s as protobuf's text format writes a string in C++ (DebugString) and Python
// (str(message)): \n, \r, \t, \", \' and \\ escaped, every other control byte, and with
// octalHigh every byte from 0x7f on (a non-ASCII letter's UTF-8 too), as a three-digit octal
// escape; without it those from 0x80 on are kept (the UTF-8-safe printers). A plugin in either
// language quoting its request so echoes a secret with an apostrophe or a non-ASCII letter in
// a form neither Go's quoting nor JSON's writes (`TestScrubEscapesOfOtherLanguages`).
func cEscape(s string, octalHigh bool) string {
	return escapeBytes(s, `"'`, octalHigh, func(b *strings.Builder, c byte) {
		b.Write([]byte{'\\', '0' + c>>6, '0' + c>>3&7, '0' + c&7})
	})
}

// caretNotation is s as cat -v, less and vim show its control bytes: each C0 control but a tab
// and a line feed as ^ and the letter 0x40 above it (ESC as ^[), DEL as ^?; ok says s has one.
// A plugin that quotes a helper's output shown so echoes a value with ESC in it as
// "hunter2^[s3cret" (scrub36; before, shown).
func caretNotation(s string) (string, bool) {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }) {
		return "", false
	}
	var b strings.Builder
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 && c != '\t' && c != '\n':
			b.WriteByte('^')
			b.WriteByte(c + 0x40)
		case c == 0x7f:
			b.WriteString("^?")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// pyBytesRepr is s encoded as Python's repr writes bytes (b'...'), inside the quotes: the
// quote it chose (an apostrophe, unless s has one and no double quote) and backslashes
// escaped, \t, \n and \r, and every other control byte and every byte from 0x7f on as \xNN:
// a Python plugin quoting a secret it encoded (an f-string of password.encode()) shows it so.
func pyBytesRepr(s string) string {
	quote := `'`
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = `"`
	}
	const digits = "0123456789abcdef"
	return escapeBytes(s, quote, true, func(b *strings.Builder, c byte) {
		b.Write([]byte{'\\', 'x', digits[c>>4], digits[c&15]})
	})
}

// escapeBytes is s escaped byte by byte as C and its kin do: each byte of quotes and the
// backslash after a backslash, \n, \r and \t, and each other control byte, DEL and, with
// high, each byte from 0x80 on written by escape.
func escapeBytes(s, quotes string, high bool, escape func(*strings.Builder, byte)) string {
	var b strings.Builder
	for i := range len(s) {
		switch c := s[i]; {
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\\' || strings.IndexByte(quotes, c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f || c >= 0x80 && high:
			escape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// span is a stretch of a message to scrub: msg[from:to].
type span struct{ from, to int }

// redactSpans replaces each stretch of msg that spans cover with the marker: spans that overlap
// become one marker, spans that only touch one each.
func redactSpans(msg string, spans []span) string {
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	b.Grow(len(msg))
	done := 0
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from < to; i++ {
			to = max(to, spans[i].to)
		}
		b.WriteString(msg[done:from])
		b.WriteString(spec.Redacted)
		done = to
	}
	b.WriteString(msg[done:])
	return b.String()
}

// percentView is msg with each %XX (hex digits of either case) decoded to its byte and, with
// plus, each '+' read as a space, as a URL's query is; at[i] is the offset in msg of what
// became the view's byte i, and at[len(view)] is len(msg). at is nil when nothing was decoded.
func percentView(msg string, plus bool) (view string, at []int) {
	b := make([]byte, 0, len(msg))
	decoded := false
	at = make([]int, 0, len(msg)+1)
	for i := 0; i < len(msg); {
		at = append(at, i)
		switch c := msg[i]; {
		case c == '%' && i+2 < len(msg) && isHex(msg[i+1]) && isHex(msg[i+2]):
			b = append(b, unhex(msg[i+1])<<4|unhex(msg[i+2]))
			i += 3
			decoded = true
		case c == '+' && plus:
			b = append(b, ' ')
			i++
			decoded = true
		default:
			b = append(b, c)
			i++
		}
	}
	if !decoded {
		return "", nil
	}
	return string(b), append(at, len(msg))
}

// unwrappedView is msg with each line break (lineBreakEnd) that stands between two base64
// characters (or characters beyond ASCII: joins) left out, with the spaces and tabs around it: base64 (or hex) as MIME, PEM, openssl and Python's
// base64.encodebytes write it, in lines of 76 or 64 characters, and as a JSON or Go-quoted dump
// of that writes it (the break as \n, \r\n), or indented under a key as YAML does. cuts says
// where the view's offsets stand in msg (joinedAt); it is nil when nothing was left out, and
// then nothing is copied.
func unwrappedView(msg string) (view string, cuts []cut) {
	var b []byte
	kept := 0 // msg[:kept] is in b, or was left out
	for i := 0; i < len(msg); {
		k := strings.IndexAny(msg[i:], "\n\r\\")
		if k < 0 {
			break
		}
		from := i + k
		for from > 0 && (msg[from-1] == ' ' || msg[from-1] == '\t') {
			from--
		}
		to := lineBreakEnd(msg, from)
		if from == 0 || to == from || to == len(msg) || !joins(msg[from-1]) || !joins(msg[to]) || from < kept {
			i += k + 1
			continue
		}
		if b == nil {
			b = make([]byte, 0, len(msg))
		}
		b = append(b, msg[kept:from]...)
		kept = to
		cuts = append(cuts, cut{view: len(b), msg: to})
		i = to
	}
	if cuts == nil {
		return "", nil
	}
	return string(append(b, msg[kept:]...)), cuts
}

// joins reports whether a line break after (or before) byte c is left out of unwrappedView: a
// base64 character, or a byte of a character beyond ASCII (a letter of another script: a
// secret "пароль-секрет" wrapped at "пароль-\nсекрет" or "сек\nрет" was shown, recheck39b).
// The view is only looked in: what it joins is masked only where it spells a value.
func joins(c byte) bool { return isBase64(c) || c >= utf8.RuneSelf }

// cut says that from the view's offset view on, its bytes are msg's from offset msg on.
type cut struct{ view, msg int }

// joinedAt is the offset in msg of the view's byte i (unwrappedView).
func joinedAt(cuts []cut, i int) int {
	n := sort.Search(len(cuts), func(k int) bool { return cuts[k].view > i })
	if n == 0 {
		return i
	}
	return cuts[n-1].msg + i - cuts[n-1].view
}

// lineBreakEnd returns the end of the line break at msg[i:] (\r\n, \n or a carriage return
// alone, or the two-character escapes a quoted dump writes for them), with the spaces and tabs
// before and after it, or i when there is none. A carriage return alone is one too (scrub36):
// a terminal goes back to the line's start there and writes what follows over what is before
// it ("hunter2-\rs3cret" draws "s3cret2-"), but what volctl writes is not only drawn: its
// --json, the event log, the agent's log and a redirect to a file carry the byte or its
// escape, where a reader reads "hunter2-" and then "s3cret", the secret split as a line
// break splits it (scrub34 to scrub35 kept it so, for what a terminal draws alone). A run of
// carriage returns with at most one line feed among them is one break too (secrets37): a
// second return goes back to the start of the line it is at, and "hunter2-\r\rs3cret",
// "hunter2-\r\r\ns3cret" (a CRLF text written again with CRLF ends) are read as the single
// return's are; before, the view joined only one break's bytes and such a secret was shown.
// So is a run of line feeds, blank lines between a secret's halves (secrets38; secrets37 had
// held a paragraph's end no break): whoever reads the bytes (--json, the event log, a file)
// reads "hunter2-", then "s3cret", as across one line feed, and a terminal draws the two a row
// or more apart, which the drawn view joins already when a vertical tab or CUD moves there
// (its blank rows left out); before, "hunter2-\n\ns3cret" was shown while "hunter2-\v\vs3cret",
// the same rows, was masked. Joined, the halves are masked only where they spell a value.
func lineBreakEnd(msg string, i int) int {
	j := skipBlanks(msg, i)
	end := i
	for {
		switch rest := msg[j:]; {
		case strings.HasPrefix(rest, "\r"), strings.HasPrefix(rest, "\n"):
			j++
		case strings.HasPrefix(rest, `\r`), strings.HasPrefix(rest, `\n`):
			j += 2
		default:
			return end
		}
		j = skipBlanks(msg, j)
		end = j
	}
}

func skipBlanks(msg string, i int) int {
	for i < len(msg) && (msg[i] == ' ' || msg[i] == '\t') {
		i++
	}
	return i
}

// isBase64 reports whether c is a character of base64's standard or URL alphabet (hex's are
// among them).
func isBase64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// minBase64Core is the fewest base64 characters scrubbed of a value encoded inside a longer
// text: four characters carry 24 bits of it, the three bytes of minScrubLen.
const minBase64Core = 4

// appendEncodedForms appends s hex-encoded (either case) and base64-encoded (standard and URL
// alphabets, padded and raw), and its base64 cores.
//
// base64 encodes 3-byte groups, so s inside a longer text (basic auth's "user:secret") is
// encoded differently at each of the three offsets it may start at within a group, and the
// characters at its ends share bits with its neighbours. Its core at an offset is the run of
// characters all of whose 6 bits are s's: those are found wherever s lands, and at most one
// character at each end, holding a few of s's bits, is left. A core shorter than
// minBase64Core (a 3-byte value off the group's start) is not scrubbed. Hex of s inside longer
// hex is s's own hex, as hex is written byte by byte.
func appendEncodedForms(out []string, s string) []string {
	// s after two zero bytes: from shift on, s at each offset within base64's 3-byte groups.
	shifted := make([]byte, 2+len(s))
	copy(shifted[2:], s)
	src := shifted[2:]
	// Every form is written into buf and sliced out of one string made of it.
	b64 := base64.StdEncoding.EncodedLen(len(s) + 2)
	buf := make([]byte, 0, 4*len(s)+8*b64)
	var forms [16][2]int
	n := 0
	add := func(from, to int) {
		forms[n] = [2]int{from, to}
		n++
	}
	buf = hex.AppendEncode(buf, src)
	hexLen := len(buf)
	add(0, hexLen)
	for i := range hexLen {
		c := buf[i]
		if c >= 'a' {
			c -= 'a' - 'A'
		}
		buf = append(buf, c)
	}
	add(hexLen, len(buf))
	for _, enc := range [][2]*base64.Encoding{{base64.StdEncoding, base64.RawStdEncoding}, {base64.URLEncoding, base64.RawURLEncoding}} {
		padded, raw := enc[0], enc[1]
		from := len(buf)
		buf = padded.AppendEncode(buf, src)
		add(from, len(buf))
		add(from, from+raw.EncodedLen(len(s)))
		for shift := range 3 {
			// Character i holds bits [6i, 6i+6); s's are [8*shift, 8*(shift+len(s))).
			first, end := (8*shift+5)/6, 8*(shift+len(s))/6
			if end-first < minBase64Core {
				continue
			}
			from := len(buf)
			buf = raw.AppendEncode(buf, shifted[2-shift:])
			add(from+first, from+end)
		}
	}
	all := string(buf)
	for _, f := range forms[:n] {
		out = append(out, all[f[0]:f[1]])
	}
	return out
}

// jsonQuote is s as a JSON string, quotes included.
func jsonQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return string(b)
}

// jsonQuoteNoHTML is s as JSON without HTML escaping ('<', '>', '&' as they are), as protojson
// and volctl's own --json write it.
func jsonQuoteNoHTML(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
