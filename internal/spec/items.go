package spec

import (
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// MaxItems bounds the items (names, numbers, blanks, punctuation, line ends: itemLimitAt) a spec file
// may hold. HCL's scanners make a token of some hundred bytes of each, and volctl's checks and
// both parsers go over them more than once: a 1 MiB file of one-character items (`a {}` lines,
// a list of a million ones, blank lines) took 400 to 700 MB and 10 to 35 seconds before a
// single diagnostic, refusing it. Nomad's specs hold a few hundred items; the largest volctl
// writes (`volctl init`) under a thousand.
const MaxItems = 1 << 16

// checkItems returns one error diagnostic at the item past MaxItems, or nil. It reads the bytes
// alone, before any lexer or checkNesting (which lexes a file with non-ASCII code).
func (f *source) checkItems() hcl.Diagnostics {
	end := f.pastItems()
	if end < 0 {
		return nil
	}
	at := end - 1
	for !utf8.RuneStart(f.src[at]) {
		at--
	}
	// The lines up to the item alone: no more than MaxItems of them.
	m := &offsetMap{src: f.src, lineStarts: lineStarts(f.src[:end])}
	rng := hcl.Range{Filename: f.filename, Start: m.pos(at), End: m.pos(end)}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Too many items",
		Detail: fmt.Sprintf("%s holds more than %d items by here (names, numbers, runs of blanks, punctuation and line ends count one each). "+
			"A spec holds a few hundred, so volctl stops reading the file here rather than spend hundreds of MB and seconds parsing it: "+
			"is it the file you meant?", f.filename, MaxItems),
		Subject: &rng,
		Extra:   ownWords{}, // volctl's words alone: hideMasked need not lex the file for them
	}}
}

// itemLimitAt returns the offset of the item that passes limit in src, or -1 when there are
// no more than limit. It counts more than HCL's scanners make tokens, never fewer: a run of
// ASCII letters, digits and underscores is one item, and so is a run of blanks (spaces, tabs,
// carriage returns: in a string, one between template sequences is a token of its own); every
// other character (a non-ASCII one, punctuation, a line end; each byte of invalid UTF-8) is
// one, and a letter or underscore after a run's leading digits starts another (HCL reads "0a"
// as a number and a name). Strings and comments are counted as code is: no spec's strings come
// near (a map of values is at most 4 KiB), and a count that follows no context cannot be led to
// skip what a scanner would read.
func itemLimitAt(src []byte, limit int) int {
	n := 0
	var run byte    // the class of the run the last byte was in: 'a' a name, ' ' blanks, 0 none
	digits := false // the name run so far is digits alone: a letter after them starts a token
	for i := 0; i < len(src); {
		c, size, class := src[i], 1, byte(0)
		switch {
		case isAlnum(c) || c == '_':
			class = 'a'
		case c == ' ' || c == '\t' || c == '\r':
			class = ' '
		case c >= utf8.RuneSelf:
			_, size = utf8.DecodeRune(src[i:])
		}
		isDigit := '0' <= c && c <= '9'
		// "0a" is a number and a name, two tokens; a number takes every digit, so a run holds
		// at most one such turn ("1e5x" is read "1", "e5x": two items, as many as its tokens).
		if class == 0 || class != run || digits && !isDigit {
			if n++; n > limit {
				return i
			}
		}
		digits = class == 'a' && isDigit && (run != 'a' || digits)
		run = class
		i += size
	}
	return -1
}
