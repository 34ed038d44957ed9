package csi

import (
	"sync"
	"unicode/utf8"

	"github.com/volctl/volctl/internal/spec"
)

// shownDiffers reports whether msg may read otherwise than its bytes spell it (shownView): it
// has a backslash (an escape), a control byte other than a tab or a line break (a carriage
// return not before a line feed included: the start of the line written over), DEL, or the
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
	t['\\'], t[0x7f], t[0xc2] = true, true, true
	return &t
})

// shownView is msg as a reader of it reads it: each escape a quoting wrote undone (\xNN,
// octal \NNN, \uNNNN with a surrogate pair joined as JSON and Python's json.dumps write a
// character past U+FFFF, \UNNNNNNNN, Rust's \u{HEX}, Ruby's \e, and \\, \", \', \/), then
// drawn as a terminal draws it: what shows as nothing left out (control bytes other than a tab
// or a line break, DEL, C1 controls, escape sequences, written raw, as an escape, or begun by
// a C1 introducer as UTF-8: escapeSeq), and what spec.ShowsAsNothing reports (Unicode's
// default ignorables and format characters: zero width spaces and joiners, bidi controls,
// soft hyphen, byte order mark, variation selectors, combining grapheme joiner, Hangul
// fillers, tags); the cursor moved as the terminal moves it (a backspace back a character, a
// carriage return to the line's start, a tab to the next tab stop (drawing.tab), CSI's CUB, CUF and CHA, DECSC/DECRC and CSI s/u saving
// and restoring it, EL cutting the line at it), the characters written after a move written over those
// there (keepShown); and the run after a right-to-left override (U+202E, to U+202C or the
// line's end) reversed, as a terminal that lays out bidi text shows it. A plugin that writes
// a secret with one of those inside it ("hun\x1b[0mter2", "hun\u200bter2",
// "hunXXXX\x1b[4Dter2", "\u202e2retnuh") shows it whole to whoever reads the terminal, the
// --json's string or the log, while none of its bytes spells it; an honest plugin's text
// holds a value so only when it echoes it. Terminals differ in two of those: whether a C1
// control as UTF-8 begins a sequence (xterm's and VTE's do) or is one character shown as
// nothing, and whether an override reverses the text (one that lays out bidi text) or shows as
// nothing; drawn reads them the first way, else the second, and twoWays says msg has one of
// them, so the other reading differs (the scrubber looks in both). at[i] is the offset in msg
// of what became the view's byte i, at[len(view)] is len(msg); at is nil when the view is
// msg. Not drawn: moves
// to another line (CUU, CUD, CUP), scrolling, insert and delete (ICH, DCH), wide characters'
// two columns, and a terminal that reads 0x80..0x9F bytes (not UTF-8) as C1 controls.
func shownView(msg string, drawn bool) (view string, at []int, twoWays bool) {
	d, dat := unescaped(msg)
	// What is kept is written over d and dat: never past what was read, but for the blanks a
	// move forward past the line's end writes, for which v.b and v.at are copied.
	v := drawing{b: d[:0], at: dat[:0], blanks: len(d)}
	saved := 0
	dropped := false
	for i := 0; i < len(d); {
		c := d[i]
		n := 1
		switch {
		case c == 0x1b || drawn && c == 0xc2 && i+1 < len(d) && d[i+1] >= 0x80 && d[i+1] <= 0x9f:
			var csi bool
			var final byte
			var params []byte
			n, csi, final, params = escapeSeq(d[i:])
			switch {
			case csi && final == 'D':
				v.back(csiCount(params))
			case csi && final == 'C':
				v.forward(csiCount(params), dat[i])
			case csi && final == 'G':
				v.cur = v.line
				v.forward(csiCount(params)-1, dat[i])
			case csi && final == 'K':
				v.erase(params)
			case csi && final == 's' && len(params) == 0, !csi && final == '7' && c == 0x1b:
				saved = v.cur
			case csi && final == 'u' && len(params) == 0, !csi && final == '8' && c == 0x1b:
				v.cur = max(v.line, min(saved, len(v.b)))
			}
		case c == 0x08:
			v.back(1)
		case c == '\t' && v.tab(dat[i]):
		case c == '\r':
			v.cur = v.line
		case c < 0x20 && c != '\t' && c != '\n', c == 0x7f:
		case c >= 0x80:
			r, size := utf8.DecodeRune(d[i:])
			n = size
			twoWays = twoWays || r == 0x202e || r >= 0x90 && r <= 0x9f
			if r == 0x202e && drawn {
				n = v.reversed(d, dat, i+size) + size
				break
			}
			if r == utf8.RuneError || !(r <= 0x9f || spec.ShowsAsNothing(r)) {
				v.keep(d[i:i+n], dat[i])
				i += n
				continue
			}
		default:
			if c == '\n' {
				v.cur = len(v.b) // a new line: what a backspace went back over stays as it is
			}
			if v.cur == len(v.b) { // most bytes: kept at the end
				v.b, v.at = append(v.b, c), append(v.at, dat[i])
				v.cur++
			} else {
				v.keep(d[i:i+1], dat[i])
			}
			if c == '\n' {
				v.line = len(v.b)
			}
			i++
			continue
		}
		dropped = true
		i += n
	}
	if !dropped && len(d) == len(msg) {
		return "", nil, false
	}
	return string(v.b), append(v.at, len(msg)), twoWays
}

// drawing is shownView's view as it is drawn: b the text, at its bytes' sources, cur the cursor (where the
// next character goes: the end, or the character it writes over), line where its line begins.
type drawing struct {
	b         []byte
	at        []int
	cur, line int
	blanks    int  // how many blanks forward may still write: msg's length in all
	own       bool // b and at are copies, no longer written over what was read
}

// keep writes the character p, from msg[src], at the cursor (keepShown).
func (v *drawing) keep(p []byte, src int) { v.b, v.at, v.cur = keepShown(v.b, v.at, v.cur, p, src) }

// back moves the cursor back k characters, not past its line's start.
func (v *drawing) back(k int) {
	for ; k > 0 && v.cur > v.line; k-- {
		v.cur--
		for v.cur > v.line && v.b[v.cur]&0xc0 == 0x80 {
			v.cur--
		}
	}
}

// forward moves the cursor on k characters; past the end, over blanks, which a terminal shows
// between what was written and what is written there (src the move's source).
func (v *drawing) forward(k, src int) {
	for ; k > 0; k-- {
		if v.cur == len(v.b) {
			if v.blanks == 0 {
				return
			}
			v.blanks--
			if !v.own {
				// The blanks are not msg's bytes: written into copies from the first one on,
				// never over what is unread.
				v.b, v.at, v.own = append(make([]byte, 0, 2*len(v.b)+16), v.b...), append(make([]int, 0, 2*len(v.at)+16), v.at...), true
			}
			v.b = append(v.b, ' ')
			v.at = append(v.at, src)
			v.cur++
			continue
		}
		v.cur++
		for v.cur < len(v.b) && v.b[v.cur]&0xc0 == 0x80 {
			v.cur++
		}
	}
}

// tab moves the cursor to the next tab stop (every 8 columns), over what is written and on
// past the end over blanks, as a terminal moves it (src the tab's source), when the line's
// start is at most maxMove bytes back: a tab costs at most that. It reports false (the tab
// kept as one character, as before) when the start is farther back.
func (v *drawing) tab(src int) bool {
	col := 0
	for k := v.cur - 1; k >= v.line; k-- {
		if v.cur-k > maxMove {
			return false
		}
		if v.b[k]&0xc0 != 0x80 {
			col++
		}
	}
	v.forward(8-col%8, src)
	return true
}

// erase is EL with no parameter or 0: the line from the cursor on is cut. EL 1 and 2, which
// blank the line before the cursor or all of it, are left as they are: what they erased is
// kept in the view, where a value found is masked though no longer shown, which costs a
// false find at worst, where blanking it cost a pass over the line each (a message of them
// would cost its length squared).
func (v *drawing) erase(params []byte) {
	if len(params) == 0 || string(params) == "0" {
		v.b, v.at = v.b[:v.cur], v.at[:v.cur]
	}
}

// reversed writes the characters of d from i to the run's end (U+202C, a line break, another
// override, or the end) last first, as a terminal that lays out bidi text shows what follows a
// right-to-left override, and returns the run's length. What shows as nothing in it is left
// out; a control or escape sequence ends the run early, read as usual after it.
func (v *drawing) reversed(d []byte, dat []int, i int) int {
	type char struct{ from, to, src int }
	var run []char
	var text []byte // the run's bytes and sources, which the view is written over, copied
	k := i
	for k < len(d) {
		r, size := utf8.DecodeRune(d[k:])
		if r < 0x20 || r == 0x7f || r == 0x202c || r == 0x202d || r == 0x202e || r == 0x2069 {
			break
		}
		if r == utf8.RuneError || !(r >= 0x80 && r <= 0x9f || spec.ShowsAsNothing(r)) {
			run = append(run, char{len(text), len(text) + size, dat[k]})
			text = append(text, d[k:k+size]...)
		}
		k += size
	}
	for j := len(run) - 1; j >= 0; j-- {
		v.keep(text[run[j].from:run[j].to], run[j].src)
	}
	return k - i
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

// keepShown puts the character p, from msg[src], at cur of the view b (at its offsets): over the
// character there, if a backspace moved cur back (one of another length, and what follows,
// are cut: a rare case, and cut it is never longer), else at the end.
func keepShown(b []byte, at []int, cur int, p []byte, src int) ([]byte, []int, int) {
	if cur < len(b) {
		m := 1
		for cur+m < len(b) && b[cur+m]&0xc0 == 0x80 {
			m++
		}
		if m == len(p) {
			copy(b[cur:], p)
			for k := range m {
				at[cur+k] = src
			}
			return b, at, cur + m
		}
		b, at = b[:cur], at[:cur]
	}
	b = append(b, p...)
	for range p {
		at = append(at, src)
	}
	return b, at, len(b)
}

// shownBounds is the stretch of msg that wrote the view's bytes from..to-1 (at: shownView's
// offsets): from the first source among them to where the last one ends. A backspace may have
// put a later source before an earlier one.
func shownBounds(msg string, at []int, from, to int) (int, int) {
	lo, hi := at[from], 0
	for _, a := range at[from:to] {
		lo, hi = min(lo, a), max(hi, shownEnd(msg, a))
	}
	return lo, hi
}

// shownEnd is where the source of a byte of shownView's view ends, the byte at msg[from]
// (at[i]) its start: after the escape that wrote it, the character, or the byte itself.
func shownEnd(msg string, from int) int {
	switch {
	case msg[from] == '\\':
		if _, n := unescape(nil, msg[from:]); n > 0 {
			return from + n
		}
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
func unescaped(msg string) (d []byte, at []int) {
	d = make([]byte, 0, len(msg))
	at = make([]int, 0, len(msg)+1) // shownView appends the end
	for i := 0; i < len(msg); {
		if msg[i] == '\\' {
			if out, n := unescape(d, msg[i:]); n > 0 {
				for range len(out) - len(d) {
					at = append(at, i)
				}
				d = out
				i += n
				continue
			}
		}
		d = append(d, msg[i])
		at = append(at, i)
		i++
	}
	return d, at
}

// unescape appends to d what the escape at the start of s (s[0] is a backslash) stands for,
// and returns its length, or 0 when it is none shownView undoes.
func unescape(d []byte, s string) ([]byte, int) {
	if len(s) < 2 {
		return d, 0
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
