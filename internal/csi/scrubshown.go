package csi

import (
	"sync"
	"unicode/utf8"

	"github.com/volctl/volctl/internal/spec"
)

// shownDiffers reports whether msg may read otherwise than its bytes spell it (shownView): it
// has a backslash (an escape), a control byte other than a tab or a line break, DEL, or the
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
		t[c] = c != '\t' && c != '\n' && c != '\r'
	}
	t['\\'], t[0x7f], t[0xc2] = true, true, true
	return &t
})

// shownView is msg as a reader of it reads it: each escape a quoting wrote undone (\xNN,
// octal \NNN, \uNNNN with a surrogate pair joined as JSON and Python's json.dumps write a
// character past U+FFFF, \UNNNNNNNN, Rust's \u{HEX}, Ruby's \e, and \\, \", \', \/), then
// what shows as nothing left out: control bytes other than a tab or a line break, DEL, C1
// controls, escape sequences (ansiLen's, whether written raw or as an escape), a backspace,
// with the character after it written over the one before (keepShown), and what
// spec.ShowsAsNothing reports (Unicode's default ignorables and format characters: zero width
// spaces and joiners, bidi controls, soft hyphen, byte order mark, variation selectors,
// combining grapheme joiner, Hangul fillers, tags). A plugin that writes a secret with one of those inside it ("hun\x1b[0mter2",
// "hun\u200bter2", "\u0068\u0075...") shows it whole to whoever reads the terminal, the
// --json's string or the log, while none of its bytes spells it; an honest plugin's text
// holds a value so only when it echoes it. at[i] is the offset in msg of what became the
// view's byte i, at[len(view)] is len(msg); at is nil when the view is msg.
func shownView(msg string) (view string, at []int) {
	d, dat := unescaped(msg)
	// What is kept is written over d and dat: never past what was read. cur is where the next
	// character kept goes: the end, or, after a backspace (which moves a terminal's cursor back
	// a character), the character it writes over.
	b, at := d[:0], dat[:0]
	cur := 0
	dropped := false
	for i := 0; i < len(d); {
		c := d[i]
		n := 1
		switch {
		case c == 0x1b:
			n = ansiLen(d[i:])
		case c == 0x08:
			if cur > 0 {
				cur--
				for cur > 0 && b[cur]&0xc0 == 0x80 {
					cur--
				}
			}
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r', c == 0x7f:
		case c >= 0x80:
			r, size := utf8.DecodeRune(d[i:])
			n = size
			if r == utf8.RuneError || !(r <= 0x9f || spec.ShowsAsNothing(r)) {
				b, at, cur = keepShown(b, at, cur, d[i:i+n], dat[i])
				i += n
				continue
			}
		default:
			if c == '\n' {
				cur = len(b) // a new line: what a backspace went back over stays as it is
			}
			if cur == len(b) { // most bytes: kept at the end
				b, at = append(b, c), append(at, dat[i])
				cur++
			} else {
				b, at, cur = keepShown(b, at, cur, d[i:i+1], dat[i])
			}
			i++
			continue
		}
		dropped = true
		i += n
	}
	if !dropped && len(d) == len(msg) {
		return "", nil
	}
	return string(b), append(at, len(msg))
}

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

// ansiLen is the length of the escape sequence at the start of s (s[0] is ESC), as a terminal
// reads it (ECMA-48): a CSI (ESC [, parameters and intermediates, a final byte), an OSC (ESC ],
// up to BEL or ESC \\, or the end), a DCS, SOS, PM or APC string (ESC P, X, ^, _, up to ESC \\,
// or the end), an nF sequence (ESC, intermediates 0x20..0x2F, a final byte: tput sgr0's
// ESC ( B), or ESC and one byte 0x30..0x7E (ESC 7, ESC =, ESC M).
func ansiLen(s []byte) int {
	if len(s) < 2 {
		return 1
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
			if s[i] < 0x20 || s[i] > 0x3f {
				return i
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 && s[1] == ']' {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	if s[1] >= 0x20 && s[1] <= 0x2f {
		i := 2
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			return i + 1
		}
		return i
	}
	if s[1] >= 0x30 && s[1] <= 0x7e {
		return 2
	}
	return 1
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
