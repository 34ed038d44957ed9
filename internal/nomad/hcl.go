package nomad

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/volctl/volctl/internal/spec"
)

// This file is volctl's HCL writer for the exported files. It writes the bytes hclwrite's
// generated-and-formatted output has for the same content (TestWriterMatchesHCLWrite compares
// them on random bodies), without linking hclwrite: hclwrite imports go-cmp, whose package
// initialisation (regexp compilation) every volctl process would pay for, though only the
// export commands write HCL.
//
// What it writes, in hclwrite's canonical form:
//   - bodies of attributes, blocks (a type and quoted labels), comment lines and blank lines,
//     indented two spaces per level;
//   - the "=" of consecutive attribute lines (attributes, or the entries of an object)
//     aligned one column after the longest name, counting columns as grapheme clusters; a
//     line of another kind (block, comment, blank, a multi-line object) ends the run;
//   - strings (values, labels, object keys) in Unicode normal form C, as cty holds them, and
//     quoted, escaped as HCL's quoted template needs: \n \r \t \" \\, a "${" or "%{"
//     doubled to "$${" and "%%{" so nothing is interpolated (in volume files, which HCL1
//     reads too, its brace written \u007b instead: escapeString), and any character
//     unicode.IsPrint refuses as \uXXXX (\UXXXXXXXX beyond the BMP);
//   - lists on one line, objects one entry a line in key order (an identifier key bare, any
//     other quoted, and "for", which hclwrite writes bare, so that the object does not parse
//     as a for expression), an empty object as {}.

// hclValue is an attribute value: a string, an integer, a bool, a list or an object.
type hclValue struct {
	kind hclKind
	str  string
	num  int64
	bit  bool
	list []hclValue
	obj  map[string]hclValue
	// changed says a string was given other than in NFC, and so is written other than it
	// was given; changedKeys are the object's keys, as given, for which that is so.
	changed     bool
	changedKeys []string
}

type hclKind uint8

const (
	hclString hclKind = iota
	hclNumber
	hclBool
	hclList
	hclObject
)

func hclStr(s string) hclValue {
	n := cty.NormalizeString(s)
	return hclValue{kind: hclString, str: n, changed: n != s}
}

func hclInt(n int64) hclValue         { return hclValue{kind: hclNumber, num: n} }
func hclBoolean(b bool) hclValue      { return hclValue{kind: hclBool, bit: b} }
func hclTuple(v ...hclValue) hclValue { return hclValue{kind: hclList, list: v} }

// hclObj is an object value; its entries are written in key order. A non-empty object is
// written one entry a line, so it cannot be a list's element. Keys are normalised (NFC) as
// strings are; of keys that become the same, the value of the first in byte order is kept, as
// hclwrite keeps one. The exporters refuse such maps before they write (sameInNFC).
func hclObj(m map[string]hclValue) hclValue {
	v := hclValue{kind: hclObject, obj: make(map[string]hclValue, len(m))}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		nk := cty.NormalizeString(k)
		if _, dup := v.obj[nk]; !dup {
			v.obj[nk] = m[k]
			if nk != k {
				v.changedKeys = append(v.changedKeys, k)
			}
		}
	}
	return v
}

func hclStrings(s []string) hclValue {
	vals := make([]hclValue, len(s))
	for i, v := range s {
		vals[i] = hclStr(v)
	}
	return hclTuple(vals...)
}

func hclStringMap(m map[string]string) hclValue {
	out := make(map[string]hclValue, len(m))
	for k, v := range m {
		out[k] = hclStr(v)
	}
	return hclObj(out)
}

// hclBody is a file's body or a block's, in the order its items were added.
type hclBody struct {
	items []hclItem
}

type hclItem struct {
	kind   hclItemKind
	name   string // attribute name, block type, comment text
	labels []string
	value  hclValue
	body   *hclBody
}

type hclItemKind uint8

const (
	hclAttr hclItemKind = iota
	hclBlock
	hclComment
	hclBlank
)

// attr appends the attribute name = v. name must be an identifier; the caller sets each name
// once per body.
func (b *hclBody) attr(name string, v hclValue) {
	b.items = append(b.items, hclItem{kind: hclAttr, name: name, value: v})
}

// block appends a block and returns its body.
func (b *hclBody) block(typ string, labels ...string) *hclBody {
	body := &hclBody{}
	b.items = append(b.items, hclItem{kind: hclBlock, name: typ, labels: labels, body: body})
	return body
}

// comment appends "# text" lines, one for each line of text.
func (b *hclBody) comment(text string) {
	for line := range strings.SplitSeq(text, "\n") {
		b.items = append(b.items, hclItem{kind: hclComment, name: line})
	}
}

// blank appends an empty line.
func (b *hclBody) blank() {
	b.items = append(b.items, hclItem{kind: hclBlank})
}

// changed returns where in b the first string (a value, an object key or a block label) is
// that the writer writes other than it was given, because it was not in Unicode normal form C:
// its attribute's path, with the key or index ("secrets[\"k\"]", "mount_options.mount_flags[0]").
// It returns "" when every string is written as given.
func (b *hclBody) changed() string {
	for _, it := range b.items {
		switch it.kind {
		case hclAttr:
			if p := it.value.changedAt(it.name); p != "" {
				return p
			}
		case hclBlock:
			for _, l := range it.labels {
				if cty.NormalizeString(l) != l {
					return fmt.Sprintf("%s label %+q", it.name, l)
				}
			}
			if p := it.body.changed(); p != "" {
				return it.name + "." + p
			}
		}
	}
	return ""
}

// changedAt is changed for a value at path.
func (v hclValue) changedAt(path string) string {
	switch {
	case v.changed:
		return path
	case len(v.changedKeys) > 0:
		return fmt.Sprintf("%s[%+q] (the key)", path, v.changedKeys[0])
	}
	for i, e := range v.list {
		if p := e.changedAt(fmt.Sprintf("%s[%d]", path, i)); p != "" {
			return p
		}
	}
	for _, k := range slices.Sorted(maps.Keys(v.obj)) {
		if p := v.obj[k].changedAt(fmt.Sprintf("%s[%+q]", path, k)); p != "" {
			return p
		}
	}
	return ""
}

// bytes renders the body as a file.
func (b *hclBody) bytes() []byte { return b.render(false) }

// bytesForHCL1 renders the body as a file that HCL1 (what `nomad volume register` parses
// volume files with) reads back to the same strings as HCL2 does: see escapeString.
func (b *hclBody) bytesForHCL1() []byte { return b.render(true) }

func (b *hclBody) render(hcl1 bool) []byte {
	w := hclLines{hcl1: hcl1}
	w.body(b, 0)
	return w.write()
}

// hclLine is one line of output: its indentation level, the text before the "=" of an
// assignment (or the whole line), and the assignment from its "=" on, if it has one.
type hclLine struct {
	depth  int
	lead   []byte
	cols   int // lead's width in grapheme clusters; set for lines with an assignment
	assign []byte
}

// hclLines is the file being written, and whether its strings must read back through HCL1 too.
type hclLines struct {
	lines []hclLine
	hcl1  bool
}

func (w *hclLines) body(b *hclBody, depth int) {
	for _, it := range b.items {
		switch it.kind {
		case hclAttr:
			w.assignment([]byte(it.name), spec.Graphemes(it.name), it.value, depth)
		case hclBlock:
			head := []byte(it.name)
			for _, l := range it.labels {
				head = appendQuoted(append(head, ' '), cty.NormalizeString(l), w.hcl1)
			}
			w.lines = append(w.lines, hclLine{depth: depth, lead: append(head, " {"...)})
			w.body(it.body, depth+1)
			w.lines = append(w.lines, hclLine{depth: depth, lead: []byte("}")})
		case hclComment:
			w.lines = append(w.lines, hclLine{depth: depth, lead: append([]byte("# "), it.name...)})
		case hclBlank:
			w.lines = append(w.lines, hclLine{})
		}
	}
}

// assignment appends name = v: one line, or for a non-empty object an opening line, a line
// per entry one level deeper and a closing one.
func (w *hclLines) assignment(name []byte, cols int, v hclValue, depth int) {
	if v.kind != hclObject || len(v.obj) == 0 {
		w.lines = append(w.lines, hclLine{depth: depth, lead: name, cols: cols, assign: appendInline([]byte("= "), v, w.hcl1)})
		return
	}
	w.lines = append(w.lines, hclLine{depth: depth, lead: append(name, " = {"...)})
	for _, k := range slices.Sorted(maps.Keys(v.obj)) {
		if bareKey(k, w.hcl1) {
			w.assignment([]byte(k), spec.Graphemes(k), v.obj[k], depth+1)
			continue
		}
		esc := escapeString(nil, k, w.hcl1)
		w.assignment(appendQuoted(nil, k, w.hcl1), 2+spec.Graphemes(string(esc)), v.obj[k], depth+1)
	}
	w.lines = append(w.lines, hclLine{depth: depth, lead: []byte("}")})
}

// bareKey says whether an object key is written as a bare identifier. "for" is quoted: an
// object whose first entry begins with the word for parses as a for expression (hclwrite
// writes it bare, and the file does not parse). A key that is not UTF-8 is quoted, its invalid
// bytes written as U+FFFD as a string's are: hclsyntax.ValidIdentifier takes "\xd50", and
// written bare it made a file neither HCL1 nor volctl reads. In a file for HCL1 (hcl1), a key
// HCL1 does not take as a name (a combining mark, U+00B7, a letter number: spec.HCL1Name) is
// quoted too: written bare, `nomad volume register` refused the file ("illegal char")
// (FuzzVolumeFileReadsBack). So are "true" and "false", the only words HCL1's scanner reads
// as other than a name (a BOOL token, which HCL1 takes as no map key: TestWriterQuotesBoolKeys).
func bareKey(k string, hcl1 bool) bool {
	if hcl1 {
		if _, ok := spec.HCL1Name(k); !ok || k == "true" || k == "false" {
			return false
		}
	}
	return utf8.ValidString(k) && hclsyntax.ValidIdentifier(k) && k != "for"
}

// write lays the lines out: indentation, and the "=" of each run of consecutive assignment
// lines one column after the run's longest lead.
func (w hclLines) write() []byte {
	var out []byte
	lines := w.lines
	for i := 0; i < len(lines); {
		if lines[i].assign == nil {
			out = lines[i].appendIndented(out)
			out = append(out, '\n')
			i++
			continue
		}
		end, widest := i, 0
		for ; end < len(lines) && lines[end].assign != nil; end++ {
			widest = max(widest, 2*lines[end].depth+lines[end].cols)
		}
		for _, l := range lines[i:end] {
			out = l.appendIndented(out)
			for range widest - 2*l.depth - l.cols + 1 {
				out = append(out, ' ')
			}
			out = append(append(out, l.assign...), '\n')
		}
		i = end
	}
	return out
}

func (l hclLine) appendIndented(out []byte) []byte {
	if len(l.lead) == 0 && l.assign == nil {
		return out // a blank line has no indentation
	}
	for range 2 * l.depth {
		out = append(out, ' ')
	}
	return append(out, l.lead...)
}

// appendInline appends a value written on one line: anything but a non-empty object.
func appendInline(out []byte, v hclValue, hcl1 bool) []byte {
	switch v.kind {
	case hclString:
		return appendQuoted(out, v.str, hcl1)
	case hclNumber:
		return strconv.AppendInt(out, v.num, 10)
	case hclBool:
		return strconv.AppendBool(out, v.bit)
	case hclList:
		out = append(out, '[')
		for i, e := range v.list {
			if i > 0 {
				out = append(out, ", "...)
			}
			if e.kind == hclObject && len(e.obj) > 0 {
				panic("nomad: the HCL writer does not put a non-empty object in a list")
			}
			out = appendInline(out, e, hcl1)
		}
		return append(out, ']')
	case hclObject:
		if len(v.obj) > 0 {
			panic("nomad: a non-empty object is not written inline")
		}
		return append(out, "{}"...)
	}
	panic(fmt.Sprintf("nomad: HCL value of unknown kind %d", v.kind))
}

func appendQuoted(out []byte, s string, hcl1 bool) []byte { return spec.AppendHCLQuoted(out, s, hcl1) }

// escapeString appends s escaped for a quoted HCL string so that it reads back as s
// (spec.AppendHCLEscaped).
func escapeString(out []byte, s string, hcl1 bool) []byte { return spec.AppendHCLEscaped(out, s, hcl1) }
