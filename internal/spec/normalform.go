package spec

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/text/unicode/norm"
)

// normalForm warns of a value whose text, as written at rng, is not in Unicode normal form C
// (a letter and its combining mark apart, "e" U+0301, as macOS and some password tools write
// them): HCL2's parsers, native and JSON, read every string in NFC (cty normalises each
// string it holds), so volctl reads, and sends the plugin, other bytes than those written,
// where Nomad's HCL1 sends them as written: a password written so no longer matches, an
// external_id names other storage. volctl cannot read the bytes as written through HCL2, so
// it says so, naming the value (what) and never quoting it: it may be a secret
// (TestStringValuesNotInNFCAreWarnedOf).
func (d *decoder) normalForm(what string, rng hcl.Range) {
	if d.src == nil || rng.Start.Byte < 0 || rng.End.Byte > len(d.src) || rng.Start.Byte >= rng.End.Byte {
		return
	}
	raw := d.src[rng.Start.Byte:rng.End.Byte]
	if ascii(raw) && !bytesContain(raw, '\\') {
		return // the common case: ASCII, no escape that could write a mark
	}
	if norm.NFC.IsNormalString(writtenText(raw)) {
		return
	}
	d.warnf(rng, "Value not in Unicode normal form C",
		"%s is written with characters Unicode normal form C (NFC) writes otherwise: a letter and its combining mark apart, as some systems and password tools write them, or a character NFC replaces (the Kelvin sign, K). "+
			"volctl reads every string in NFC, as HCL2 does, and so reads other bytes than those written, and sends them, where Nomad sends the bytes as written. "+
			"Write the value in NFC (most editors have a command for it), or, if the storage holds it as written, know that volctl sends it composed.", what)
}

// keyNormalForm is normalForm for a key of the map name, read as key: a quoted key, or a bare
// one of an object, is read in NFC as a string is, but a bare one of a block (`parameters {
// é = "x" }`) is an argument name, which HCL keeps as written; so the key is warned of where
// it differs from its text, escapes read, only.
func (d *decoder) keyNormalForm(name, key string, rng hcl.Range) {
	if d.src == nil || rng.Start.Byte < 0 || rng.End.Byte > len(d.src) || rng.Start.Byte >= rng.End.Byte {
		return
	}
	raw := d.src[rng.Start.Byte:rng.End.Byte]
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if string(raw) == key || writtenText(raw) == key {
		return
	}
	d.normalForm("The key "+name+"."+key, rng)
}

// normalFormList is normalForm for each item of a list written out (mount_flags), or for the
// whole expression otherwise.
func (d *decoder) normalFormList(name string, expr hcl.Expression) {
	items, diags := hcl.ExprList(expr)
	if diags.HasErrors() {
		d.normalForm(name, expr.Range())
		return
	}
	for i, it := range items {
		d.normalForm(name+"["+strconv.Itoa(i)+"]", it.Range())
	}
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func bytesContain(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// writtenText is raw, the source text of a value, with its \u and \U escapes (HCL's and
// JSON's, a JSON surrogate pair as one character) read as the characters they write, and
// any other escape as the character after its backslash: what the value holds before HCL2
// normalises it, as far as its normal form goes (quotes and the other escapes are ASCII,
// which a combining mark does not compose with).
func writtenText(raw []byte) string {
	out := make([]rune, 0, len(raw))
	s := string(raw)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != '\\' || i+1 >= len(s) {
			out = append(out, r)
			i += n
			continue
		}
		switch s[i+1] {
		case 'u', 'U':
			digits := 4
			if s[i+1] == 'U' {
				digits = 8
			}
			if v, err := strconv.ParseUint(safeSlice(s, i+2, i+2+digits), 16, 32); err == nil {
				r, i = rune(v), i+2+digits
				if utf16.IsSurrogate(r) && safeSlice(s, i, i+2) == `\u` {
					if lo, err := strconv.ParseUint(safeSlice(s, i+2, i+6), 16, 32); err == nil {
						if pair := utf16.DecodeRune(r, rune(lo)); pair != utf8.RuneError {
							r, i = pair, i+6
						}
					}
				}
				out = append(out, r)
				continue
			}
		}
		out = append(out, rune(s[i+1]))
		i += 2
	}
	return string(out)
}

func safeSlice(s string, from, to int) string {
	if to > len(s) {
		return ""
	}
	return s[from:to]
}
