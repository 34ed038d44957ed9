package csi

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/volctl/volctl/internal/spec"
)

// shownDiffers reports whether msg may read otherwise than its bytes spell it (shownView): it
// has a backslash (an escape), a control byte other than a tab or a line break (a carriage
// return not before a line feed included: the start of the line written over), DEL, "^[" (ESC
// as cat -v shows it), or the
// first byte of a C1 control (0xc2) or of a character spec.ShowsAsNothing reports
// (spec.InvisibleLeads), that character then decoded and asked of. Most messages have none,
// and cost this one pass.
func shownDiffers(msg string) bool {
	t := shownMayDiffer()
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if !t[c] {
			continue
		}
		if c < 0x80 {
			if c == '\r' && i+1 < len(msg) && msg[i+1] == '\n' {
				i++ // a line's end, as CRLF writes it: the view would be the same
				continue
			}
			if c == '^' && !(i+1 < len(msg) && msg[i+1] == '[') {
				continue // a caret alone; "^[" is ESC as cat -v shows it
			}
			return true
		}
		// A lead the table marks begins others too (0xe3 kana, 0xf0 emoji): the character decides.
		r, n := utf8.DecodeRuneInString(msg[i:])
		if r == utf8.RuneError || r <= 0x9f || spec.ShowsAsNothing(r) {
			return true
		}
		i += n - 1
	}
	return false
}

// shownMayDiffer holds the bytes shownDiffers looks for, made on first use from the predicate
// shownView drops by, so the two cannot disagree.
var shownMayDiffer = sync.OnceValue(func() *[256]bool {
	t := *spec.InvisibleLeads()
	for c := range 0x20 {
		t[c] = c != '\t' && c != '\n' // a carriage return moves the cursor back: shownDiffers asks
	}
	t['\\'], t['^'], t[0x7f], t[0xc2] = true, true, true, true
	return &t
})

// shownView is msg as a reader of it reads it: each escape a quoting wrote undone (\xNN,
// octal \NNN, \uNNNN with a surrogate pair joined as JSON and Python's json.dumps write a
// character past U+FFFF, \UNNNNNNNN, Rust's \u{HEX}, Ruby's \e, and \\, \", \', \/), then
// drawn as a terminal draws it, in rows and columns (drawing): what shows as nothing left out
// (control bytes other than a tab or a line break, DEL, C1 controls, escape sequences, written
// raw, as an escape, or begun by a C1 introducer as UTF-8: escapeSeq), and what
// spec.ShowsAsNothing reports (Unicode's default ignorables and format characters: zero width
// spaces and joiners, bidi controls, soft hyphen, byte order mark, variation selectors,
// combining grapheme joiner, Hangul fillers, tags); a character written in its columns (a wide
// one, East Asian wide or an emoji, in two, a combining mark in its letter's: shownWidth); the
// cursor moved as the terminal moves it, a column at a time (a backspace, a carriage return to
// the line's start, a tab to the next stop of every 8 columns, CSI's CUB, CUF and CHA, EL cutting
// the line at it and EL 2 blanking it) and a row at a time (a line feed to the next row's start,
// as a terminal's output post-processing writes it; a vertical tab, a form feed, IND and
// CUD down in the same column, RI and CUU up, CNL and CPL to the start of the next or previous,
// CUP and VPA to an absolute row, DECSC/DECRC and CSI s/u saving and restoring both), the
// characters written after a move written over those there, a wide one's other half rubbed out
// with it; and the run after a right-to-left override (U+202E, to U+202C or the line's end)
// reversed, as a terminal that lays out bidi text shows it. The view is the rows, top to
// bottom, each ended by a line break. A plugin that writes a secret with one of those inside
// it ("hun\x1b[0mter2", "hun\u200bter2", "hunXXXX\x1b[4Dter2", "hun界\b\bter2",
// "hunXXXX\n\x1b[A\x1b[3Cter2", "\u202e2retnuh") shows it whole to whoever reads the
// terminal, the --json's string or the log, while none of its bytes spells it; an honest
// plugin's text holds a value so only when it echoes it. Terminals differ in two of those:
// whether a C1 control as UTF-8 begins a sequence (xterm's and VTE's do) or is one character
// shown as nothing, and whether an override reverses the text (one that lays out bidi text) or
// shows as nothing; drawn reads them the first way, else the second, and twoWays says msg has
// one of them, so the other reading differs (the scrubber looks in both). at[i] is the offset
// in msg of what became the view's byte i, at[len(view)] is len(msg); at is nil when the view
// is msg. Not drawn: the screen's width (a line wrapped at its edge), where the message began
// on it (an absolute row, CUP's and VPA's, is a row of its own, never one a line feed or a
// relative move reaches; nor the screen's bottom row, unknown), and a terminal that reads
// 0x80..0x9F bytes (not UTF-8) as C1 controls. Drawn: REP, ICH, DCH, ECH, EL 1, IL and DL
// (repeat, edit, erase, lines), within a bound of the message's length of cells. Drawn in the
// readings that draw the screen (drawnView's readScreen, scrub36): SU and SD, DECSTBM's
// region and move home, DECOM's rows, a line feed or RI scrolling the region at its margin,
// CUU and CUD stopped at the first row or a margin on an absolute row, and ED. Ambiguous-width
// characters and those VS16 makes emoji are read in one column and in two (readAmbiguousWide,
// readEmojiWide), each of the readings (drawnView) in every combination the message needs.
//
// How the escapes of control bytes are read is controls (controlsShown).
// back says the cursor was moved back or up (a backspace, a carriage return, CUB, CUU, CUP...):
// without, what is drawn is the text in its order, a tab's blanks and line breaks between.
func shownView(msg string, drawn bool, controls controlsShown) (view string, at []int, twoWays, back bool) {
	rd := reading(0)
	if drawn {
		rd = readC1
	}
	view, at, others, back := drawnView(msg, rd, controls)
	return view, at, others&readC1 != 0, back
}

// reading is how a terminal draws what terminals differ on (shownView): each bit one way of a
// pair, the other way when it is clear. drawnView draws one reading; findShown looks in each
// that the message holds something it differs on (others), every combination of them.
type reading uint8

const (
	// readC1 reads a C1 control as UTF-8 as one (U+009B a CSI...), and reverses the run after a
	// right-to-left override; clear, both show as nothing.
	readC1 reading = 1 << iota
	// readScreen draws the screen's own moves and edits (scrub36): SU, SD, DECSTBM, DECOM, ED,
	// a line feed or RI at a scrolling region's margin scrolling it, CUU, CUD, CNL and CPL
	// stopped at the first row or a margin on an absolute row. Clear, they are not drawn, as
	// before scrub36, so that a value that reading found (a first half ED erased, read before
	// the rest by whoever reads the bytes) is still found.
	readScreen
	// readAmbiguousWide gives an East Asian ambiguous-width character (Greek, Cyrillic, "…",
	// "±", "é", circled digits) two columns, as a terminal in a CJK locale does; clear, one.
	readAmbiguousWide
	// readEmojiWide gives a character followed by VS16 (U+FE0F, emoji presentation) two
	// columns, as kitty, WezTerm, iTerm2, foot and Windows Terminal do; clear, its own width.
	readEmojiWide
	readings = 1 << 4 // how many readings there are
)

// drawnView is shownView in the reading rd; others says which of the readings' bits msg holds
// something to differ on (a C1 control or an override, a screen move or edit, an ambiguous
// character, a VS16 after a character): drawn with any of them flipped, the view may differ.
func drawnView(msg string, rd reading, controls controlsShown) (view string, at []int, others reading, back bool) {
	view, at, _, others, back = draw(msg, rd, controls, false)
	return view, at, others, back
}

// draw is drawnView, and with track the first source written in each view byte's column
// (firsts, as at is: the earliest byte of msg that drew a character there, written over since
// or not: shownBounds).
func draw(msg string, rd reading, controls controlsShown, track bool) (view string, at, firsts []int, others reading, back bool) {
	d, dat := unescaped(msg, controls != controlsEscaped)
	drawn := rd&readC1 != 0
	v := drawing{d: d, dat: dat, blanks: len(d), work: len(d), rd: rd, track: track}
	for i := 0; i < len(d); {
		c := d[i]
		n := 1
		switch {
		case controls == controlsKept && (c < 0x20 && c != 0x1b || c == 0x7f), controls == controlsKeptAll && (c < 0x20 || c == 0x7f):
			v.put(i, i+1, 1)
		case c == 0x1b || drawn && c == 0xc2 && i+1 < len(d) && d[i+1] >= 0x80 && d[i+1] <= 0x9f:
			var csi bool
			var final byte
			var params []byte
			n, csi, final, params = escapeSeq(d[i:])
			v.moved = dat[i]
			if c == 0xc2 && !csi { // IND, NEL and RI as C1 controls
				switch d[i+1] {
				case 0x84:
					final = 'D'
				case 0x85:
					final = 'E'
				case 0x8d:
					final = 'M'
				}
			}
			switch {
			case csi && strings.IndexByte("DGKAFHfduJSTr", final) >= 0, !csi && (final == 'M' || final == '8'),
				csi && (final == 'h' || final == 'l') && originMode(params):
				back = true
			}
			screen := csi && strings.IndexByte("JSTrHfd", final) >= 0 || csi && (final == 'h' || final == 'l') && originMode(params)
			if screen {
				others |= readScreen
			}
			if !v.screen() && screen && strings.IndexByte("Hfd", final) < 0 {
				final = 0 // not drawn in this reading
			}
			switch {
			case csi && final == 'D':
				v.col = max(0, v.col-csiCount(params))
			case csi && final == 'C':
				v.col += csiCount(params)
			case csi && final == 'G':
				v.col = csiCount(params) - 1
			case csi && final == 'K':
				v.erase(params)
			case csi && final == 'J' && v.screen():
				v.eraseDisplay(params)
			case csi && final == 'b':
				v.repeat(csiCount(params))
			case csi && (final == '@' || final == 'P' || final == 'X'):
				v.edit(final, csiCount(params))
			case csi && final == 'L':
				v.lines(csiCount(params))
			case csi && final == 'M':
				v.lines(-csiCount(params))
			case csi && (final == 'A' || final == 'F'):
				v.down(-csiCount(params), final == 'F')
			case csi && (final == 'B' || final == 'E'):
				v.down(csiCount(params), final == 'E')
			case !csi && final == 'M':
				v.index(-1, false)
			case !csi && (final == 'D' || final == 'E'):
				v.index(1, final == 'E')
			case csi && (final == 'S' || final == 'T') && plainParams(params):
				n := csiCount(params)
				if final == 'T' {
					n = -n
				}
				v.scroll(n)
			case csi && final == 'r' && plainParams(params):
				v.margins(params)
			case csi && (final == 'h' || final == 'l') && originMode(params):
				v.origin = final == 'h'
				v.row, v.col = v.absRow(1), 0
			case csi && final == 'd':
				v.row = v.absRow(csiCount(params))
			case csi && (final == 'H' || final == 'f'):
				v.row, v.col = v.absRow(csiCount(params)), csiCount(csiParam(params, 1))-1
			case csi && final == 's' && len(params) == 0, !csi && final == '7' && c == 0x1b:
				v.savedRow, v.savedCol = v.row, v.col
			case csi && final == 'u' && len(params) == 0, !csi && final == '8' && c == 0x1b:
				v.row, v.col = v.savedRow, v.savedCol
			}
		case c == 0x08:
			v.col, back = max(0, v.col-1), true
		case c == '\t':
			v.moved = dat[i]
			v.col += 8 - v.col%8
		case c == '\r':
			v.col, back = 0, true
		case c == '\n':
			v.moved = dat[i]
			v.index(1, true)
			v.line() // made, empty if nothing is written in it: the view keeps each line break
		case c == '\v' || c == '\f':
			v.moved = dat[i]
			v.index(1, false)
		case c < 0x20, c == 0x7f:
		case c >= 0x80:
			r, size := utf8.DecodeRune(d[i:])
			n = size
			if r == 0x202e || r >= 0x90 && r <= 0x9f {
				others |= readC1
			}
			if r == 0x202e && drawn {
				n = v.reversed(i+size) + size
				break
			}
			if r == utf8.RuneError || !(r <= 0x9f || spec.ShowsAsNothing(r)) {
				v.char(i, i+n, r)
			}
		default:
			v.put(i, i+1, 1)
		}
		i += n
	}
	view, at = v.view()
	others |= v.others
	if view == msg {
		return "", nil, nil, others, back
	}
	return view, append(at, len(msg)), v.firsts, others, back
}

// controlsShown is how shownView reads a control byte and the escape a quoting wrote for it.
type controlsShown uint8

const (
	// controlsEscaped keeps the escapes C and its kin write for control bytes (controlEscapes:
	// \t, \n, \b...) as written, and draws the bytes: a value with a tab or a line break in it
	// quoted so ("pass\tword") is found as its quoted form in a view that undid another escape
	// inside it ("pa\u0073s\tword").
	controlsEscaped controlsShown = iota
	// controlsDrawn undoes those escapes too, and draws them: a reader decoding the string (jq
	// -r, a log viewer) has the cursor moved by "\b" as by a backspace ("hunter2-X\bs3cret"
	// draws the secret).
	controlsDrawn
	// controlsKept undoes them, and keeps every control byte but ESC in the view as a character,
	// not drawn: a value with a tab or a carriage return in it, which a drawing cannot spell
	// (a tab is blanks to its stop), echoed with an escape or what shows as nothing inside
	// ("pass\u0009word", "pass\tw\u200bord"), is found as the decoded string holds it.
	controlsKept
	// controlsKeptAll is controlsKept with ESC kept as a character too, not read as beginning a
	// sequence: a value with ESC in it, echoed with an escape for it no quoting of the whole
	// value writes (Rust's "\u{1b}", JavaScript's "\x1B", Ruby's "\e", Java's "\u001B"), is
	// found as the decoded string holds it (scrub36; before, each was shown).
	controlsKeptAll
)

// absoluteRows is the first row a move to an absolute row (CUP, VPA) goes to: the message's
// own rows, which begin where the terminal's cursor was, are counted from 0, and no relative
// move of a message goes near this far (csiCount's maxMove a move).
const absoluteRows = 1 << 40

// drawing is shownView's view as it is drawn: the rows written, each a cell a column; the
// cursor, at row and col, where the next character goes.
type drawing struct {
	d        []byte              // the message with its escapes undone, which the cells point into
	dat      []int               // the offset in the message of each byte of d
	rows     []*drawnRow         // made in key order, top to bottom, until a row above is made (unsorted)
	byKey    map[int64]*drawnRow // the rows by key, made once a row not the last is looked up
	unsorted bool                // a row was made above the last: view sorts rows
	cur      *drawnRow           // the row at row, once looked up or made
	row      int64
	col      int
	savedRow int64
	savedCol int
	// top and bottom are the scrolling region's margins DECSTBM set, rows of the screen (0:
	// none set, the screen's first or last row), origin DECOM's origin mode (CUP and VPA count
	// rows from the top margin).
	top, bottom int64
	origin      bool
	blanks      int // how many blanks a character written past a line's end may still put before it: msg's length in all
	moved       int // the source of the last move: the blanks it leaves are from there
	// work is how many cells REP, ICH, DCH, ECH and EL 1 may still write, shift or blank: the
	// message's length in all, so that a message of them costs at most twice its length.
	work int
	// last is the last character put, from, to and its width: what REP repeats.
	last [3]int
	// rd is the reading drawn; others the bits of the readings a character drawn differs on
	// (drawnView's others).
	rd, others reading
	// track keeps each row's first source written in each column (drawnRow.firsts), and view
	// gives them for its bytes in firsts (draw).
	track  bool
	firsts []int
}

// screen says the screen's own moves and edits are drawn (readScreen).
func (v *drawing) screen() bool { return v.rd&readScreen != 0 }

// drawnRow is a row written: its cells, and the source of the line break or move that began it.
type drawnRow struct {
	key   int64
	from  int
	cells []drawnCell
	// firsts, when the drawing tracks them, is the first character's source (in d) written in
	// each column, -1 for none: kept when the cell is written over, erased or cut.
	firsts []int32
}

// drawnCell is a column of a row: d[from:to], the character written there (with the combining
// marks after it), or, when from is blankCell, a blank (its source in to), or when wideHalf,
// the right half of the wide character before it.
type drawnCell struct{ from, to int32 }

const (
	blankCell = -1
	wideHalf  = -2
)

// down moves the cursor k rows down (up when k < 0), to the row's start with home, as CUD,
// CUU, CNL and CPL do: on an absolute row (CUP's, VPA's), it stops at the screen's first row,
// and inside the scrolling region at its margins, as a terminal stops it (scrub36: before, CUU
// from the first row went to a row above it, and a secret written there again was not found).
// On the message's own rows the screen's edges are not known: it goes where it is sent.
func (v *drawing) down(k int, home bool) {
	if home {
		v.col = 0
	}
	if v.row < absoluteRows || !v.screen() {
		v.row += int64(k)
		return
	}
	r := v.row - absoluteRows
	top, bottom := max(v.top, 1), v.bottom
	if k < 0 {
		floor := int64(1)
		if r >= top {
			floor = top
		}
		r = max(r+int64(k), floor)
	} else {
		r += int64(k)
		if bottom > 0 && r-int64(k) <= bottom {
			r = min(r, bottom)
		}
	}
	v.row = absoluteRows + r
}

// index moves the cursor a row down (k 1: a line feed, IND, NEL, a vertical tab, a form feed)
// or up (k -1: RI), to the row's start with home; on an absolute row at the scrolling region's
// bottom (or top) margin, the region is scrolled instead (scroll) and the cursor stays, as a
// terminal does. The bottom of a screen with no region set is not known: the cursor goes down.
func (v *drawing) index(k int, home bool) {
	if home {
		v.col = 0
	}
	if v.row >= absoluteRows && v.screen() {
		r := v.row - absoluteRows
		switch {
		case k > 0 && v.bottom > 0 && r == v.bottom:
			v.scroll(1)
			return
		case k < 0 && r == max(v.top, 1):
			v.scroll(-1)
			return
		case k < 0 && r <= 1:
			return
		}
	}
	v.row += int64(k)
}

// absRow is the key of the screen's row r (from 1) that CUP and VPA go to: counted from the
// scrolling region's top margin in origin mode.
func (v *drawing) absRow(r int) int64 {
	if v.origin {
		return absoluteRows + max(v.top, 1) - 1 + int64(r)
	}
	return absoluteRows + int64(r)
}

// margins is DECSTBM: the scrolling region from its first parameter's row to its second's (a
// missing one the screen's edge), refused when it is empty, and the cursor sent home (the top
// margin in origin mode).
func (v *drawing) margins(params []byte) {
	top := int64(csiCount(params))
	bottom := int64(0)
	if p := csiParam(params, 1); len(p) > 0 {
		bottom = int64(csiCount(p))
	}
	if bottom > 0 && top >= bottom {
		return
	}
	v.top, v.bottom = top, bottom
	v.row, v.col = v.absRow(1), 0
}

// scroll is SU (n > 0: what the screen shows moved n rows up) and SD (n < 0: down), the cursor
// staying where it is on the screen, so that it comes to another row of what was written:
// every row when no region is set (the message's own rows with the absolute ones: the whole
// screen moves), else the absolute rows inside the region, those that leave it lost. A row
// moved below the screen's bottom or above its top is kept (the bottom is not known; the top
// goes to the scrollback). Before scrub36, SU and SD were not drawn: "hunter2-XXXXXX\n",
// SD, "s3cret" at column 9 drew the secret in the row SD brought under the cursor. Each costs
// v.work the rows drawn: past it, scroll does nothing.
func (v *drawing) scroll(n int) {
	if len(v.rows) > v.work {
		return
	}
	v.work -= len(v.rows)
	if v.top <= 1 && v.bottom == 0 {
		for _, r := range v.rows {
			r.key -= int64(n)
		}
	} else {
		lo, hi := absoluteRows+max(v.top, 1), int64(absoluteRows+1<<40)
		if v.bottom > 0 {
			hi = absoluteRows + v.bottom
		}
		in := func(r *drawnRow) bool { return r.key >= lo && r.key <= hi }
		v.rows = slices.DeleteFunc(v.rows, func(r *drawnRow) bool {
			if !in(r) {
				return false
			}
			r.key -= int64(n)
			return !in(r)
		})
	}
	v.rekey()
}

// rekey finds the rows anew by their keys, which scroll or lines changed: the rows' order is
// kept, and sorted by view.
func (v *drawing) rekey() {
	if v.byKey == nil {
		v.byKey = make(map[int64]*drawnRow, len(v.rows))
	}
	clear(v.byKey)
	for _, r := range v.rows {
		v.byKey[r.key] = r
	}
	v.unsorted = true
	v.cur = nil
}

// eraseDisplay is ED (and DECSED, which erases the same where nothing is protected): with no
// parameter or 0, the line cut at the cursor (EL 0) and the rows below emptied; with 1, the
// line up to the cursor blanked (EL 1) and the rows above emptied; with 2, every row emptied
// (the cursor staying). Rows are the cursor's own set (the message's own or the absolute ones,
// as lines moves them), but for 2. Before scrub36, ED was not drawn: "hunter2XXXXXXX", back to
// column 8, ED, forward a column and "s3cret" drew a passphrase "hunter2 s3cret" whose blank
// the view held an X in. Each costs v.work the rows drawn: past it, only the cursor's line is
// erased.
func (v *drawing) eraseDisplay(params []byte) {
	if len(params) > 0 && params[0] == '?' {
		params = params[1:]
	}
	var el []byte
	var rows func(r *drawnRow) bool
	abs := v.row >= absoluteRows
	same := func(r *drawnRow) bool { return (r.key >= absoluteRows) == abs }
	switch string(params) {
	case "", "0":
		rows = func(r *drawnRow) bool { return same(r) && r.key > v.row }
	case "1":
		el = []byte("1")
		rows = func(r *drawnRow) bool { return same(r) && r.key < v.row }
	case "2":
		el = []byte("2")
		rows = func(*drawnRow) bool { return true }
	default:
		return
	}
	cur := v.line()
	v.erase(el)
	if len(v.rows) > v.work {
		return
	}
	v.work -= len(v.rows)
	for _, r := range v.rows {
		if r != cur && rows(r) {
			r.cells = r.cells[:0]
		}
	}
}

// plainParams says a CSI's parameters have no private marker ('?', '>', '=', '<'): SU, SD and
// DECSTBM, not the sequences of other meanings that share their final byte.
func plainParams(params []byte) bool {
	return len(params) == 0 || params[0] < '<' || params[0] > '?'
}

// originMode says a private mode set or reset (CSI ? ... h, l) names DECOM (6).
func originMode(params []byte) bool {
	if len(params) == 0 || params[0] != '?' {
		return false
	}
	for p := params[1:]; ; {
		i := bytes.IndexByte(p, ';')
		if i < 0 {
			return string(p) == "6"
		}
		if string(p[:i]) == "6" {
			return true
		}
		p = p[i+1:]
	}
}

// line is the row the cursor is in, made when it is not there.
func (v *drawing) line() *drawnRow {
	if v.cur != nil && v.cur.key == v.row {
		return v.cur
	}
	// Rows are most often made top to bottom, each after the last: appended. Another is found
	// by its key, and one made above the last is appended too, and the rows sorted once, by
	// view: kept sorted by an insert each, a message moving up a row before each character
	// ("\x1b[Ax" repeated) cost its length squared, 12 s of CPU for 1 MiB, which a plugin's
	// message or answer may be (recheck35, TestScrubOfAMessageMovingUpEachCharacterIsLinear).
	n := len(v.rows)
	if v.byKey != nil || n > 0 && v.rows[n-1].key >= v.row {
		if v.byKey == nil {
			v.byKey = make(map[int64]*drawnRow, len(v.rows))
			for _, r := range v.rows {
				v.byKey[r.key] = r
			}
		}
		if r := v.byKey[v.row]; r != nil {
			v.cur = r
			return r
		}
	}
	if n > 0 && v.rows[n-1].key > v.row {
		v.unsorted = true
	}
	r := &drawnRow{key: v.row, from: v.moved}
	if len(v.rows) == 0 {
		r.cells = make([]drawnCell, 0, len(v.d)) // the first row, most often the only one
	}
	v.rows = append(v.rows, r)
	if v.byKey != nil {
		v.byKey[r.key] = r
	}
	v.cur = r
	return r
}

// char writes the character d[from:to], r, at the cursor in its columns (shownWidth): a
// combining mark goes with the character before the cursor, when its bytes follow that
// character's in d (else it is left out: a mark written after a move, which terminals place
// differently).
func (v *drawing) char(from, to int, r rune) {
	w, ambiguous := shownWidth(r)
	if ambiguous {
		v.others |= readAmbiguousWide
		if v.rd&readAmbiguousWide != 0 {
			w = 2
		}
	}
	if w == 1 && bytes.HasPrefix(v.d[to:], vs16) {
		v.others |= readEmojiWide
		if v.rd&readEmojiWide != 0 {
			w = 2
		}
	}
	if w > 0 {
		v.put(from, to, w)
		return
	}
	row := v.line()
	k := min(v.col, len(row.cells)) - 1
	if k >= 0 && row.cells[k].from == wideHalf {
		k--
	}
	if k >= 0 && row.cells[k].from >= 0 && int(row.cells[k].to) == from {
		row.cells[k].to = int32(to)
	}
}

// vs16 is VARIATION SELECTOR-16 as UTF-8: the character before it asks for emoji presentation.
var vs16 = []byte("\ufe0f")

// put writes d[from:to], w columns wide, at the cursor, over what is there, and moves the
// cursor past it. Past the line's end, blanks are put between, as many as v.blanks allows: a
// move's cell beyond them is brought back to the end. A wide character written over in part
// is rubbed out whole, its other half a blank.
func (v *drawing) put(from, to, w int) {
	row := v.line()
	if gap := v.col - len(row.cells); gap > 0 {
		gap = min(gap, v.blanks)
		v.blanks -= gap
		for range gap {
			row.cells = append(row.cells, drawnCell{blankCell, int32(v.moved)})
		}
		v.col = len(row.cells)
	}
	for k := v.col; k < v.col+w; k++ {
		row.rub(k, v.dat)
	}
	v.last = [3]int{from, to, w}
	if v.track {
		for len(row.firsts) < v.col+w {
			row.firsts = append(row.firsts, -1)
		}
		for k := v.col; k < v.col+w; k++ {
			if row.firsts[k] < 0 {
				row.firsts[k] = int32(from)
			}
		}
	}
	for k := range w {
		c := drawnCell{int32(from), int32(to)}
		if k > 0 {
			c = drawnCell{wideHalf, 0}
		}
		if v.col+k < len(row.cells) {
			row.cells[v.col+k] = c
		} else {
			row.cells = append(row.cells, c)
		}
	}
	v.col += w
}

// repeat is REP: the last character put written n more times, as xterm and VTE do.
func (v *drawing) repeat(n int) {
	if v.last[2] == 0 {
		return
	}
	n = min(n, v.work/v.last[2])
	v.work -= n * v.last[2]
	for range n {
		v.put(v.last[0], v.last[1], v.last[2])
	}
}

// edit is ICH (n blanks inserted at the cursor, what is after it moved right), DCH (n cells
// deleted there, what is after them moved left) and ECH (n cells from it blanked), the
// cursor left where it is; a wide character cut in two is rubbed out. Each costs v.work the
// cells it moves or blanks: past it, edit does nothing.
func (v *drawing) edit(final byte, n int) {
	row := v.line()
	if v.col >= len(row.cells) {
		return
	}
	after := len(row.cells) - v.col
	cost := after + n
	if final == 'X' {
		cost = min(n, after)
	}
	if cost > v.work {
		return
	}
	v.work -= cost
	blank := drawnCell{blankCell, int32(v.moved)}
	switch final {
	case '@':
		row.rub(v.col, v.dat)
		row.cells = slices.Insert(row.cells, v.col, slices.Repeat([]drawnCell{blank}, n)...)
	case 'P':
		end := min(v.col+n, len(row.cells))
		row.rub(v.col, v.dat)
		row.rub(end-1, v.dat)
		row.cells = slices.Delete(row.cells, v.col, end)
		if v.col < len(row.cells) && row.cells[v.col].from == wideHalf {
			row.cells[v.col] = blank
		}
	case 'X':
		end := min(v.col+n, len(row.cells))
		row.rub(v.col, v.dat)
		row.rub(end-1, v.dat)
		for k := v.col; k < end; k++ {
			row.cells[k] = blank
		}
	}
}

// lines is IL (n > 0: n empty rows inserted at the cursor's, it and those below moved down)
// and DL (n < 0: -n rows deleted from the cursor's on, those below moved up), the cursor going
// to the row's start as DEC's terminals put it. Rows of the message's own and those an
// absolute move went to are moved each among their own (absoluteRows). Each costs v.work the
// rows drawn: past it, lines does nothing.
func (v *drawing) lines(n int) {
	if len(v.rows) > v.work {
		return
	}
	v.work -= len(v.rows)
	abs := v.row >= absoluteRows
	same := func(r *drawnRow) bool { return (r.key >= absoluteRows) == abs }
	if n < 0 {
		v.rows = slices.DeleteFunc(v.rows, func(r *drawnRow) bool { return same(r) && r.key >= v.row && r.key < v.row-int64(n) })
	}
	for _, r := range v.rows {
		if same(r) && r.key >= v.row {
			r.key += int64(n)
		}
	}
	if v.byKey != nil {
		// The rows found by key before are at other keys now, or deleted: found anew (the
		// rows' order is kept, every row at or below the cursor moved alike).
		clear(v.byKey)
		for _, r := range v.rows {
			v.byKey[r.key] = r
		}
	}
	v.cur, v.col = nil, 0
}

// rub makes the other half of a wide character at column k a blank: k is to be written over.
func (r *drawnRow) rub(k int, dat []int) {
	if k >= len(r.cells) {
		return
	}
	if r.cells[k].from == wideHalf && k > 0 && r.cells[k-1].from >= 0 {
		r.cells[k-1] = drawnCell{blankCell, int32(dat[r.cells[k-1].from])}
	}
	if k+1 < len(r.cells) && r.cells[k+1].from == wideHalf && r.cells[k].from >= 0 {
		r.cells[k+1] = drawnCell{blankCell, int32(dat[r.cells[k].from])}
	}
}

// erase is EL: with no parameter or 0, the line from the cursor on is cut; with 2, the whole
// line is blanked (cut: the cursor stays, and what is written after it is put past blanks);
// with 1, the line up to the cursor and the cell under it blanked, each blank costing v.work
// (past it, EL 1 does nothing): a value with a blank in it may be drawn so, its letters
// written around what EL 1 erased ("hunter2Xs3cret", back to the X, EL 1, the line written
// again to it).
func (v *drawing) erase(params []byte) {
	row := v.line()
	switch string(params) {
	case "", "0":
		row.cells = row.cells[:min(v.col, len(row.cells))]
	case "1":
		end := min(v.col+1, len(row.cells))
		if end > v.work || end == 0 {
			return
		}
		v.work -= end
		row.rub(end-1, v.dat)
		for k := range end {
			row.cells[k] = drawnCell{blankCell, int32(v.moved)}
		}
	case "2":
		row.cells = row.cells[:0]
	}
}

// reversed writes the characters of d from i to the run's end (U+202C, a line break, another
// override, or the end) last first, as a terminal that lays out bidi text shows what follows a
// right-to-left override, and returns the run's length. What shows as nothing in it is left
// out; a control or escape sequence ends the run early, read as usual after it.
func (v *drawing) reversed(i int) int {
	type char struct {
		from, to int
		r        rune
	}
	var run []char
	k := i
	for k < len(v.d) {
		r, size := utf8.DecodeRune(v.d[k:])
		if r < 0x20 || r == 0x7f || r == 0x202c || r == 0x202d || r == 0x202e || r == 0x2069 {
			break
		}
		if r == utf8.RuneError || !(r >= 0x80 && r <= 0x9f || spec.ShowsAsNothing(r)) {
			run = append(run, char{k, k + size, r})
		}
		k += size
	}
	for j := len(run) - 1; j >= 0; j-- {
		v.char(run[j].from, run[j].to, run[j].r)
	}
	return k - i
}

// view is the rows drawn, top to bottom, each after the first begun by a line break, and the
// source of each of its bytes.
func (v *drawing) view() (string, []int) {
	if v.unsorted {
		slices.SortFunc(v.rows, func(a, b *drawnRow) int { return cmp.Compare(a.key, b.key) })
	}
	b := make([]byte, 0, len(v.d)+len(v.rows))
	at := make([]int, 0, len(v.d)+len(v.rows)+1)
	for k, r := range v.rows {
		if k > 0 {
			b, at = append(b, '\n'), append(at, r.from)
		}
		for col, c := range r.cells {
			n := len(at)
			switch c.from {
			case wideHalf:
			case blankCell:
				b, at = append(b, ' '), append(at, int(c.to))
			default:
				b, at = append(b, v.d[c.from:c.to]...), append(at, v.dat[c.from:c.to]...)
			}
			if v.track {
				v.firsts = append(v.firsts, at[len(v.firsts):n]...) // a row's break before
				first := at[n:]
				if len(first) > 0 {
					f := first[0]
					for k := col; k < len(r.firsts) && (k == col || k < len(r.cells) && r.cells[k].from == wideHalf); k++ {
						if r.firsts[k] >= 0 {
							f = min(f, v.dat[r.firsts[k]])
						}
					}
					for range first {
						v.firsts = append(v.firsts, f)
					}
				}
			}
		}
	}
	if v.track {
		v.firsts = append(v.firsts, at[len(v.firsts):]...)
	}
	return string(b), at
}

// shownWidth is how many columns a terminal gives the character r: 2 for an East Asian wide
// or fullwidth one (CJK, kana, Hangul syllables, most emoji), 0 for a combining mark (Mn, Me),
// drawn in its letter's column, else 1; and whether it is East Asian ambiguous, which
// terminals differ on (one column, or two in a CJK locale: readAmbiguousWide). An emoji made
// wide by a variation selector is the caller's (readEmojiWide).
func shownWidth(r rune) (int, bool) {
	if r < 0xa1 {
		return 1, false
	}
	if r >= 0x300 && unicode.In(r, unicode.Mn, unicode.Me) {
		return 0, false
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2, false
	case width.EastAsianAmbiguous:
		return 1, true
	}
	return 1, false
}

// csiParam is a CSI's k-th parameter (from 0), nil when it has fewer.
func csiParam(params []byte, k int) []byte {
	for ; k > 0; k-- {
		i := bytes.IndexByte(params, ';')
		if i < 0 {
			return nil
		}
		params = params[i+1:]
	}
	return params
}

// csiCount is a cursor move's count, its first parameter: 1 when none or 0, at most maxMove.
func csiCount(params []byte) int {
	n := 0
	for _, c := range params {
		if c < '0' || c > '9' {
			break
		}
		n = min(n*10+int(c-'0'), maxMove)
	}
	return max(n, 1)
}

// maxMove bounds a move's count (CUB, CUF, CHA's column), which shownView walks a character at
// a time: a message of moves costs at most this much a byte of it. A value farther away is
// reached by more moves.
const maxMove = 256

// shownBounds is the stretch of msg that wrote the view's bytes from..to-1 (at: shownView's
// offsets, view its view): from the first source among them to where the last one ends. A
// backspace may have put a later source before an earlier one; where one did (the value drawn
// by a move back), the stretch takes in too the longest one of at least minScrubLen bytes just
// before it that begins the value: its head written first and written over by the move back,
// which the terminal showed no more, but once the value's moves are masked with it is drawn
// again. Before (scrub35), "hunter2-sXXXXX\rhunter2-\e[C3cret" was masked as
// "hunter2-[REDACTED]", which a terminal draws with the secret's first half.
func shownBounds(msg, view string, at []int, from, to int, controls controlsShown, firsts func() []int) (int, int) {
	lo, hi := at[from], 0
	back := false
	for i, a := range at[from:to] {
		back = back || i > 0 && a < at[from+i-1]
		lo, hi = min(lo, a), max(hi, shownEnd(msg, a, controls))
	}
	if back {
		value := view[from:to]
		for n := min(lo, len(value)-1); n >= minScrubLen; n-- {
			if strings.HasPrefix(value, msg[lo-n:lo]) {
				lo -= n
				break
			}
		}
		// Whatever drew a character in the value's columns before it (a head with another
		// letter after it, which EL 1 erased and the line written again drew over) is drawn
		// again once the value is masked: it is masked with it (scrub36; before,
		// "hunter2Xs3cret", back to the X, EL 1, "\rhunter2" was masked as "hunter2X[REDACTED]").
		if firsts != nil {
			for _, f := range firsts()[from:to] {
				lo = min(lo, f)
			}
		}
	}
	return lo, hi
}

// shownEnd is where the source of a byte of shownView's view ends, the byte at msg[from]
// (at[i]) its start: after the escape that wrote it, the character, or the byte itself.
func shownEnd(msg string, from int, controls controlsShown) int {
	switch {
	case msg[from] == '\\':
		if _, n := unescape(nil, msg[from:], controls != controlsEscaped); n > 0 {
			return from + n
		}
	case msg[from] == '^' && from+1 < len(msg) && msg[from+1] == '[':
		return from + 2
	case msg[from] >= 0x80:
		_, n := utf8.DecodeRuneInString(msg[from:])
		return from + n
	}
	return from + 1
}

// escapeSeq reads the control sequence at the start of s, begun by ESC or by a C1 control as
// UTF-8 (0xc2 0x80..0x9f), as an xterm-like terminal reads it (ECMA-48, DEC's parser): its
// length, whether it is a CSI (ESC [, U+009B) and then its final byte and parameters; for ESC
// and one byte, that byte as final. A CSI is its parameters and intermediates up to a final
// byte, a C0 control inside it (but CAN, SUB, ESC) carried out and the sequence going on; an
// OSC (ESC ], U+009D) up to BEL or ST (ESC \, U+009C); a DCS, SOS, PM or APC string (ESC P, X,
// ^, _; U+0090, U+0098, U+009E, U+009F) up to ST. CAN and SUB end any sequence (taken with
// it), and an ESC inside one ends it and begins the next; a string not ended runs to the
// end. An nF sequence (ESC, intermediates 0x20..0x2F, a final byte: tput sgr0's ESC ( B), or
// ESC and one byte 0x30..0x7E (ESC 7, ESC =, ESC M). Another C1 control is two bytes.
func escapeSeq(s []byte) (n int, csi bool, final byte, params []byte) {
	if len(s) < 2 {
		return 1, false, 0, nil
	}
	kind, body := s[1], 2
	if s[0] == 0xc2 {
		switch s[1] {
		case 0x9b:
			kind = '['
		case 0x9d:
			kind = ']'
		case 0x90, 0x98, 0x9e, 0x9f:
			kind = 'P'
		default:
			return 2, false, 0, nil
		}
	}
	switch kind {
	case '[':
		for i := body; i < len(s); i++ {
			switch c := s[i]; {
			case c >= 0x40 && c <= 0x7e:
				return i + 1, true, c, s[body:i]
			case c >= 0x20 && c <= 0x3f:
			case c == 0x18 || c == 0x1a:
				return i + 1, false, 0, nil
			case c == 0x1b || c >= 0x80:
				return i, false, 0, nil
			}
		}
		return len(s), false, 0, nil
	case ']', 'P', 'X', '^', '_':
		for i := body; i < len(s); i++ {
			switch c := s[i]; {
			case c == 0x07 && kind == ']':
				return i + 1, false, 0, nil
			case c == 0x18 || c == 0x1a:
				return i + 1, false, 0, nil
			case c == 0x1b:
				if i+1 < len(s) && s[i+1] == '\\' {
					return i + 2, false, 0, nil
				}
				return i, false, 0, nil
			case c == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
				return i + 2, false, 0, nil
			}
		}
		return len(s), false, 0, nil
	}
	if s[1] >= 0x20 && s[1] <= 0x2f {
		i := 2
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			return i + 1, false, 0, nil
		}
		return i, false, 0, nil
	}
	if s[1] >= 0x30 && s[1] <= 0x7e {
		return 2, false, s[1], nil
	}
	return 1, false, 0, nil
}

// unescaped is msg with the escapes of shownView undone; at[i] is the offset in msg of the
// byte (or the escape) that became byte i.
func unescaped(msg string, controls bool) (d []byte, at []int) {
	d = make([]byte, 0, len(msg))
	at = make([]int, 0, len(msg)+1) // shownView appends the end
	for i := 0; i < len(msg); {
		if msg[i] == '\\' {
			if out, n := unescape(d, msg[i:], controls); n > 0 {
				for range len(out) - len(d) {
					at = append(at, i)
				}
				d = out
				i += n
				continue
			}
		}
		if msg[i] == '^' && i+1 < len(msg) && msg[i+1] == '[' {
			// ESC as cat -v, less and vim show it: read as one by whoever knows them (scrub36;
			// before, "hun^[[0mter2-s3cret" was shown).
			d, at = append(d, 0x1b), append(at, i)
			i += 2
			continue
		}
		d = append(d, msg[i])
		at = append(at, i)
		i++
	}
	return d, at
}

// unescape appends to d what the escape at the start of s (s[0] is a backslash) stands for,
// and returns its length, or 0 when it is none shownView undoes; with controls, the escapes of
// control bytes (controlEscapes) too.
func unescape(d []byte, s string, controls bool) ([]byte, int) {
	if len(s) < 2 {
		return d, 0
	}
	if controls {
		if k := strings.IndexByte(controlEscapes, s[1]); k >= 0 && !(s[1] == '0' && len(s) >= 4 && isOctal(s[2]) && isOctal(s[3])) {
			return append(d, controlBytes[k]), 2
		}
	}
	switch c := s[1]; {
	case c == '\\' || c == '"' || c == '\'' || c == '/':
		return append(d, c), 2
	case c == 'e': // Ruby's inspect, bash's $'...', printf's: ESC
		return append(d, 0x1b), 2
	case c == 'u' && len(s) > 3 && s[2] == '{': // Rust's Debug, JavaScript's, Ruby's: \u{1b}, \u{200b}
		k := 3
		var v rune
		for k < len(s) && k < 9 && isHex(s[k]) {
			v = v<<4 | rune(unhex(s[k]))
			k++
		}
		if k > 3 && k < len(s) && s[k] == '}' && utf8.ValidRune(v) {
			return utf8.AppendRune(d, v), k + 1
		}
		return d, 0
	case c == 'x':
		if v, ok := hexValue(s[2:], 2); ok {
			return append(d, byte(v)), 4
		}
	case c >= '0' && c <= '3':
		if len(s) >= 4 && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7' {
			return append(d, (c-'0')<<6|(s[2]-'0')<<3|(s[3]-'0')), 4
		}
	case c == 'u':
		v, ok := hexValue(s[2:], 4)
		if !ok {
			return d, 0
		}
		if v >= 0xd800 && v < 0xdc00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := hexValue(s[8:], 4); ok && lo >= 0xdc00 && lo < 0xe000 {
				return utf8.AppendRune(d, 0x10000+(v-0xd800)<<10+(lo-0xdc00)), 12
			}
		}
		if v >= 0xd800 && v < 0xe000 {
			return d, 0
		}
		return utf8.AppendRune(d, v), 6
	case c == 'U':
		if v, ok := hexValue(s[2:], 8); ok && utf8.ValidRune(v) {
			return utf8.AppendRune(d, v), 10
		}
	}
	return d, 0
}

// controlEscapes are the letters of the escapes C and its kin write for a control byte, and
// controlBytes those bytes: \a BEL, \b backspace, \t, \n, \v, \f, \r, and Rust's and C's \0
// (not octal's \0NN). JSON writes \b, \t, \n, \f and \r; Go all but \0; Python \t, \n, \r.
const (
	controlEscapes = "abtnvfr0"
	controlBytes   = "\a\b\t\n\v\f\r\x00"
)

// drawsControlEscapes reports whether msg may be drawn otherwise with its escapes of control
// bytes carried out (controlsDrawn) than kept as written: it has one that shows as nothing or
// moves the cursor back or down in its column (\a, \b, \0, \v, \f, \r but before \n), or
// a \n or \t and back, the view with them kept as written moved the cursor back or up
// (shownView), which may write over the blanks or the line they make. A quoted dump of
// lines and tabs alone draws its text in its order: the view with them kept finds what it holds
// (a value with a line break or a tab quoted so).
func drawsControlEscapes(msg string, back bool) bool {
	lines := false
	for i := 0; i+1 < len(msg); i++ {
		if msg[i] != '\\' {
			continue
		}
		switch c := msg[i+1]; c {
		case '\\':
		case 'a', 'b', 'v', 'f':
			return true
		case '0':
			if !(i+3 < len(msg) && isOctal(msg[i+2]) && isOctal(msg[i+3])) {
				return true
			}
		case 'r':
			if !strings.HasPrefix(msg[i+2:], `\n`) {
				return true
			}
		case 'n', 't':
			lines = true
		}
		i++
	}
	return lines && back
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// hexValue reads n hex digits at the start of s.
func hexValue(s string, n int) (rune, bool) {
	if len(s) < n {
		return 0, false
	}
	var v rune
	for i := range n {
		if !isHex(s[i]) {
			return 0, false
		}
		v = v<<4 | rune(unhex(s[i]))
	}
	return v, true
}
