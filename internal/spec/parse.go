package spec

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
)

// Kind is what a spec file declares.
type Kind string

// The kinds of spec file.
const (
	KindVolume Kind = "volume"
	KindPlugin Kind = "plugin"
	KindGroup  Kind = "group"
)

// Kinds lists every kind, in the order help text shows them.
var Kinds = []Kind{KindVolume, KindPlugin, KindGroup}

// File is one parsed spec file. Kind says which of Volume, Plugins and Group is set.
type File struct {
	Kind    Kind
	Volume  *Volume
	Plugins []*Plugin
	Group   *Group

	agent *AgentConfig // kindAgent: ParseAgentConfig
}

// Parser parses spec files and keeps each file's original source, so that diagnostics can be
// rendered with snippets (WriteDiagnostics, DiagnosticWriter). A Parser is
// not safe for concurrent use.
type Parser struct {
	files   map[string]*hcl.File
	sources map[string]*source // each file's tokens and masked bytes, for its diagnostics' snippets

	// forceRewrite applies the HCL1 rewrite even to files that parse as HCL2 (tests use it
	// to show that the rewrite changes no diagnostics of such files).
	forceRewrite bool
}

// NewParser returns an empty Parser.
func NewParser() *Parser {
	return &Parser{files: map[string]*hcl.File{}, sources: map[string]*source{}}
}

// ParseVolume parses and validates a volume spec (HCL or JSON) for verb. It returns the volume
// when there are no errors (warnings allowed), and nil otherwise.
func ParseVolume(filename string, src []byte, verb Verb) (*Volume, hcl.Diagnostics) {
	return NewParser().ParseVolume(filename, src, verb)
}

// ParseVolume is the package-level ParseVolume, keeping the file for rendering.
func (p *Parser) ParseVolume(filename string, src []byte, verb Verb) (*Volume, hcl.Diagnostics) {
	f, diags := p.parse(filename, src, KindVolume, verb)
	if f == nil {
		return nil, diags
	}
	return f.Volume, diags
}

// ParsePlugins parses and validates a file of one or more `plugin "ID" { ... }` blocks.
func (p *Parser) ParsePlugins(filename string, src []byte) ([]*Plugin, hcl.Diagnostics) {
	f, diags := p.parse(filename, src, KindPlugin, VerbAny)
	if f == nil {
		return nil, diags
	}
	return f.Plugins, diags
}

// ParseGroup parses and validates a file holding one `group "NAME" { ... }` block.
func (p *Parser) ParseGroup(filename string, src []byte) (*Group, hcl.Diagnostics) {
	f, diags := p.parse(filename, src, KindGroup, VerbAny)
	if f == nil {
		return nil, diags
	}
	return f.Group, diags
}

// Parse parses a spec file of any kind, telling the kind from its top level: plugin blocks
// make a plugin spec, a group block a group spec, anything else a volume spec. An agent config
// (an agent block) is refused with one error. verb applies to volume specs only.
func (p *Parser) Parse(filename string, src []byte, verb Verb) (*File, hcl.Diagnostics) {
	return p.parse(filename, src, "", verb)
}

// parse loads the file, decodes it as kind (or the kind its top level shows, when kind is
// empty) and validates it. A file that is recognisably of another kind (an agent config, or
// a plugin spec given as a volume spec, say: see otherKind) gets one error saying what it is
// and which command takes it, instead of every name that is wrong for kind. The File is nil
// when any diagnostic is an error.
func (p *Parser) parse(filename string, src []byte, kind Kind, verb Verb) (*File, hcl.Diagnostics) {
	s := newSource(filename, src, isJSON(filename, src))
	p.sources[filename] = s
	f, diags := p.parseSource(s, kind, verb)
	s.settle(diags)
	return f, diags
}

// parseSource is parse of the file s.
func (p *Parser) parseSource(s *source, kind Kind, verb Verb) (*File, hcl.Diagnostics) {
	filename, src := s.filename, s.src
	body, m, parsed, diags := p.load(s)
	if diags.HasErrors() {
		// A body the parser gave up on would only add noise (missing arguments it never reached).
		readAsHCL(filename, s.json, diags)
		return nil, finishDiagnostics(diags, s)
	}
	names := topLevel(body)
	switch {
	case len(names) == 0 && kind == kindAgent:
		diags = append(diags, emptyAgentConfig(filename, src, s.json)...)
	case len(names) == 0:
		// Nothing in it: one error saying so, not one for each argument its kind needs.
		return nil, finishDiagnostics(append(diags, emptySpec(filename, src, kind, s.json)...), s)
	}
	validate := kind == ""
	if validate {
		kind = detectKind(names)
	}
	d := &decoder{json: s.json, src: parsed}
	if m != nil {
		d.lits = m.lits
	}
	f := &File{Kind: kind}
	asVolume := false // read as a volume spec, which Nomad reads too
	if kind == kindAgent {
		// An agent config may hold plugin blocks alone: it is never taken for another kind.
		f.agent = d.agentConfig(body)
	} else if other, at, ok := otherKind(names, kind); ok {
		// A file of another kind gets one error saying so, not one per name it does not share
		// with this kind; nothing else said about it would help.
		d.wrongKind(filename, kind, other, at, names, validate)
		diags = nil
	} else {
		switch kind {
		case KindPlugin:
			f.Plugins = d.plugins(body)
		case KindGroup:
			f.Group = d.group(body)
		default:
			f.Volume = d.volume(body, verb)
			d.byteOrderMark(filename, src)
			asVolume = true
		}
	}
	if m != nil {
		m.mapDiagnostics(d.diags)
	}
	if asVolume && s.json {
		d.diags = append(d.diags, nomadEscapes(filename, src)...) // in the file's positions already
		// Walked on the text HCL parsed, a raw tab in a string written as its escape (which
		// encoding/json, unlike both readers, refuses raw), its positions mapped back.
		nulls := nomadNulls(filename, parsed)
		if m != nil {
			m.mapDiagnostics(nulls)
		}
		d.diags = append(d.diags, nulls...)
	}
	if asVolume && !s.json {
		d.diags = append(d.diags, hcl1Names(s, append(diags, d.diags...))...) // in the file's positions already
	}
	diags = finishDiagnostics(append(diags, d.diags...), s)
	if diags.HasErrors() {
		return nil, diags
	}
	return f, diags
}

// load parses the file as JSON (a .json name, or content starting with "{") or HCL, once
// checkNesting has found it shallow enough for their parsers and checkItems small enough for
// their scanners. HCL that the HCL2 parser
// rejects is retried through the HCL1 rewrite; then the returned offsetMap maps the body's
// ranges back to src, and the returned diagnostics are already mapped.
func (p *Parser) load(s *source) (hcl.Body, *offsetMap, []byte, hcl.Diagnostics) {
	filename, src := s.filename, s.src
	limits := s.checkNesting()
	if !limits.HasErrors() {
		limits = s.checkItems()
	}
	if limits.HasErrors() {
		// Too deep for HCL's recursive parsers (nesting.go), or too many items for its
		// scanners (items.go): no parser sees the bytes.
		p.files[filename] = &hcl.File{Body: hcl.EmptyBody(), Bytes: src}
		return hcl.EmptyBody(), nil, nil, limits
	}
	if s.json {
		// A byte order mark is skipped as hclsyntax skips it: no column, its bytes counted.
		body, start := src, hcl.InitialPos
		if bytes.HasPrefix(src, utf8BOM) {
			body, start.Byte = src[len(utf8BOM):], len(utf8BOM)
		}
		parsed, m := src, (*offsetMap)(nil)
		if edits := rawControlEdits(src); len(edits) > 0 {
			parsed, m = applyEdits(src, edits)
			m.rw = parsed // what a range quoted in a detail is read back from (mapRangeText)
			body = parsed[start.Byte:]
		}
		f, diags := hcljson.ParseWithStartPos(body, filename, start)
		if m != nil {
			m.mapDiagnostics(diags)
		}
		for _, d := range diags {
			if d.Summary == "Extraneous data after value" {
				// Nomad's HCL1 JSON reader reads the first value and stops: what follows it (a
				// second object, its secrets too) is dropped without a word, and the spec taken.
				// volctl refuses it, saying so (TestJSONTrailingDataSaysNomadReadsTheFirstObject).
				d.Detail += " Nomad reads the first JSON value of a file and drops what follows it without a word; volctl refuses the file rather than drop it: remove what follows the spec's object, or merge it into it."
			}
		}
		diags = append(diags, invalidUTF8(filename, src)...)
		diags = append(diags, loneSurrogates(filename, src)...)
		if f == nil {
			f = &hcl.File{Body: hcl.EmptyBody()}
		}
		f.Bytes = src // what the diagnostics' ranges index, mapped back from parsed's
		var nav any = &jsonNav{src: parsed, from: start.Byte}
		if m != nil {
			nav = mappedNav{inner: nav, m: m}
		}
		f.Nav = nav
		p.files[filename] = f
		return f.Body, m, parsed, diags
	}
	body, m, parsed, diags := p.loadHCL(s)
	return body, m, parsed, hclInvalidUTF8(diags, filename, src)
}

// hclInvalidUTF8 puts the error for an HCL file's first byte that is not UTF-8 in place of the
// native parser's: that one is at the first token holding such a byte, and a comment is no
// token, so a byte in a comment passed unseen and one in a comment before a string was
// reported at the string. Nomad's HCL1 scanner refuses the file at its first such byte,
// comments too ("illegal UTF-8 encoding"), and so does volctl, at that byte
// (TestInvalidUTF8InACommentIsRefused). The native template parser's "Unterminated template
// string" at the native error's place goes with it: it echoes the bad byte
// (unterminatedEchoes), and with the error gone from there would stand alone.
func hclInvalidUTF8(diags hcl.Diagnostics, filename string, src []byte) hcl.Diagnostics {
	own := invalidUTF8(filename, src)
	if own == nil {
		return diags
	}
	native := map[int]bool{}
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Summary == "Invalid character encoding" && d.Subject != nil {
			native[d.Subject.Start.Byte] = true
		}
	}
	out := diags[:0:0]
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil && native[d.Subject.Start.Byte] &&
			(d.Summary == "Invalid character encoding" || d.Summary == "Unterminated template string") {
			continue
		}
		out = append(out, d)
	}
	return append(out, own...)
}

// loadHCL is load of an HCL file.
func (p *Parser) loadHCL(s *source) (hcl.Body, *offsetMap, []byte, hcl.Diagnostics) {
	filename, src := s.filename, s.src
	// A file that looks like HCL1 goes straight to the rewrite, saving a parse that would
	// fail; any other file is parsed as it is and rewritten only if that fails. The guess
	// only affects speed: the rewrite leaves the meaning and diagnostics of HCL2 unchanged.
	var f *hcl.File
	var diags hcl.Diagnostics
	if !p.forceRewrite && !looksHCL1(src) {
		if f, diags = hclsyntax.ParseConfig(src, filename, hcl.InitialPos); !diags.HasErrors() {
			f.Nav = newBlockNav(f.Body)
			p.files[filename] = f
			return f.Body, nil, src, diags
		}
	}
	rw, m, ok, numDiags := s.rewriteHCL1()
	if !ok {
		if f == nil { // not parsed yet: the rewrite was tried first
			f, diags = hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
		}
		f.Nav = newBlockNav(f.Body)
		p.files[filename] = f
		return f.Body, nil, src, diags
	}
	rf, diags := hclsyntax.ParseConfig(rw, filename, hcl.InitialPos)
	m.mapDiagnostics(diags)
	diags = append(numDiags, diags...) // already in the file's positions
	p.files[filename] = &hcl.File{Body: rf.Body, Bytes: src, Nav: mappedNav{inner: newBlockNav(rf.Body), m: m}}
	return rf.Body, m, rw, diags
}

// invalidUTF8 is the error for a file's first byte that is not UTF-8, as the native parser
// refuses one in a token ("Invalid character encoding") and Nomad refuses any ("illegal UTF-8
// encoding"): HCL's JSON parser reads each as U+FFFD, so a socket path or a value would be
// other text than the file's, silently (TestJSONInvalidUTF8IsRefused), and the native parser
// reads a comment's unchecked (hclInvalidUTF8). Its position only: the byte may be a secret's.
func invalidUTF8(filename string, src []byte) hcl.Diagnostics {
	if utf8.Valid(src) {
		return nil
	}
	off, n := 0, 0
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			if n == 0 {
				off = i
			}
			n++
		}
		i += size
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (the first of %d bytes that are not)", n)
	}
	return byteError(filename, src, off, 1, "Invalid character encoding",
		"All input files must be UTF-8 encoded, and this byte is not UTF-8"+more+". Ensure that UTF-8 encoding is selected in your editor.")
}

// byteError is one error at src[off:off+n], which no parser saw as wrong (invalidUTF8,
// loneSurrogates), its range's lines and columns counted from src.
func byteError(filename string, src []byte, off, n int, summary, detail string) hcl.Diagnostics {
	m := &offsetMap{src: src, lineStarts: lineStarts(src)}
	rng := hcl.Range{Filename: filename, Start: m.pos(off), End: m.pos(off + n)}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Subject: &rng, Extra: ownWords{}, Detail: detail}}
}

// loneSurrogates refuses a JSON string escape of half a UTF-16 surrogate pair ("\ud800" not
// followed by the escape of a low surrogate, or a low one alone), which holds no character:
// hcl/json read it as U+FFFD without a word, so a secret or parameter other than the file's was
// sent to the plugin, where the native form refuses the escape and Nomad's CLI cannot read it
// (TestJSONLoneSurrogateEscapeIsRefused). The escaped form of what invalidUTF8 refuses raw. An
// escaped backslash before "u" ("\\ud800") is no escape. The first is named, with their count.
func loneSurrogates(filename string, src []byte) hcl.Diagnostics {
	surrogate := func(i int) (rune, bool) { return jsonSurrogate(src, i) }
	off, n := -1, 0
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' {
			continue
		}
		r, ok := surrogate(i)
		if !ok {
			i++ // the escaped byte, a backslash too
			continue
		}
		if low, ok := surrogate(i + 6); r <= 0xdbff && ok && low >= 0xdc00 {
			i += 11 // a pair: one character
			continue
		}
		if n == 0 {
			off = i
		}
		n++
		i += 5
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (the first of %d)", n)
	}
	return byteError(filename, src, off, 6, "Invalid escape sequence",
		"This escape is half of a UTF-16 surrogate pair, which holds no character"+more+": write the character itself, which Nomad's CLI reads (it cannot read a surrogate's escape, of half a pair or of both).")
}

// jsonSurrogate is the \uXXXX escape at src[i:] of half a UTF-16 surrogate pair, if there is one.
func jsonSurrogate(src []byte, i int) (rune, bool) {
	if i+6 > len(src) || src[i] != '\\' || src[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(src[i+2:i+6]), 16, 32)
	return rune(n), err == nil && n >= 0xd800 && n <= 0xdfff
}

// nomadEscapes refuses, in a JSON volume spec, the string escapes JSON has and Nomad's HCL1 JSON
// reader does not: "\/" (a slash, as PHP's json_encode writes each one), which it refuses as an
// "illegal char escape", and a character past U+FFFF escaped as its UTF-16 surrogate pair
// ("\ud83d\ude00", as Python's json.dumps writes an emoji), which it cannot unquote and on
// which `nomad volume register` fails. hcl/json reads both as the characters they stand for, so
// volctl read, without a word, a volume spec Nomad cannot
// (TestJSONSurrogatePairEscapeIsRefused, TestJSONEscapedSlashIsRefused); a volume spec volctl reads is one Nomad reads. Each
// character written as itself is read by both. The first is named, with their count.
func nomadEscapes(filename string, src []byte) hcl.Diagnostics {
	off, size, n, what := -1, 0, 0, ""
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' {
			continue
		}
		w, l := "", 2
		if i+1 < len(src) && src[i+1] == '/' {
			w = `"\/" is JSON's escape of a slash, which Nomad's JSON reader refuses ("illegal char escape"): write the slash itself`
		} else if r, ok := jsonSurrogate(src, i); ok && r <= 0xdbff {
			if low, ok := jsonSurrogate(src, i+6); ok && low >= 0xdc00 {
				w, l = fmt.Sprintf("This is the escape of %U as its UTF-16 surrogate pair, which Nomad's JSON reader cannot read (`nomad volume register` fails on the file): "+
					"write the character itself (with Python's json.dumps, ensure_ascii=False)", utf16.DecodeRune(r, low)), 12
			}
		}
		if w == "" {
			i++ // the escaped byte, a backslash too
			continue
		}
		if n == 0 {
			off, size, what = i, l, w
		}
		n++
		i += l - 1
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (the first of %d escapes Nomad cannot read)", n)
	}
	return byteError(filename, src, off, size, "Escape Nomad cannot read", what+more+". A volume spec volctl reads is one `nomad volume register` reads.")
}

// rawControlEdits writes each control character written raw in a JSON string as its escape
// (a tab as \t), for hcl/json, which ends the string there ("Invalid JSON string") and then
// read the rest of the file out of step: a false missing comma, an object unclosed. Nomad's
// HCL1 JSON reader takes them as the characters they are, and so does volctl's native form
// (TestJSONStringWithARawTabIsReadAsNomadReadsIt). A line break still ends a string, as in
// both (a quote left out), and so do a carriage return (refused raw in a string by the native
// form: no terminal shows it) and a control character after a backslash (no escape).
func rawControlEdits(src []byte) []edit {
	var edits []edit
	for i := 0; i < len(src); {
		if src[i] != '"' {
			i++
			continue
		}
		end := jsonStringEnd(src, i)
		for j := i + 1; j < end; j++ {
			if c := src[j]; c < 0x20 {
				edits = append(edits, edit{off: j, del: 1, ins: jsonEscape(c)})
			}
		}
		i = end
	}
	return edits
}

// jsonEscape is JSON's escape of the control character c.
func jsonEscape(c byte) string {
	switch c {
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	return fmt.Sprintf(`\u%04x`, c)
}

// looksHCL1 guesses, from bytes alone, whether src uses HCL1-only syntax: a line that opens
// with a quoted name, or a "{" with more on the same line (a one-line block).
func looksHCL1(src []byte) bool {
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 || line[0] == '#' || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		if line[0] == '"' {
			return true
		}
		if i := bytes.IndexByte(line, '{'); i >= 0 {
			rest := bytes.TrimSpace(line[i+1:])
			if len(rest) > 0 && rest[0] != '}' && rest[0] != '#' && !bytes.HasPrefix(rest, []byte("//")) {
				return true
			}
		}
	}
	return false
}

// utf8BOM is the byte order mark some editors write before the first character.
var utf8BOM = []byte("\ufeff")

// byteOrderMark refuses a volume spec's byte order mark, which volctl's readers skip (as HCL
// and JSON editors mean it) but Nomad's HCL1 reader refuses ("illegal char" at 1:1), HCL and
// JSON alike: a volume spec volctl reads is one `nomad volume register` reads. The rest of the
// file is read past it, so its other problems are reported too. Plugin and group specs, which
// Nomad does not read, keep theirs.
func (d *decoder) byteOrderMark(filename string, src []byte) {
	if !bytes.HasPrefix(src, utf8BOM) {
		return
	}
	rng := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.Pos{Line: 1, Column: 1, Byte: len(utf8BOM)}}
	d.errorf(rng, "Byte order mark", "The file starts with a UTF-8 byte order mark (the bytes EF BB BF, which editors do not show), which Nomad's reader refuses "+
		"(\"illegal char\" at 1:1): `nomad volume register` refuses this file, and so does volctl, so that a volume spec volctl reads is one Nomad reads. "+
		"Save it as UTF-8 without a byte order mark.")
}

// isJSON says whether src is read as JSON: it starts with `{`, as Nomad's reader picks (by the
// content, whatever the name), or the file is named .json and starts as only JSON starts
// (startsAsJSONOnly: an array, a number, true, false or null), so such a broken JSON file
// gets JSON's errors. An HCL spec named .json, which `nomad volume register` reads, was read
// as JSON and refused (TestHCLSpecNamedJSONIsReadAsNomadReadsIt).
func isJSON(filename string, src []byte) bool {
	rest := bytes.TrimLeft(src, " \t\r\n\ufeff")
	if bytes.HasPrefix(rest, []byte("{")) {
		return true
	}
	return strings.EqualFold(filepath.Ext(filename), ".json") && startsAsJSONOnly(rest)
}

// readAsHCL says, in the first error of a file named .json that is read as HCL (isJSON) and
// does not parse, why it was read so: a JSON file with a comment before its `{` would
// otherwise get HCL's words alone.
func readAsHCL(filename string, json bool, diags hcl.Diagnostics) {
	if json || !strings.EqualFold(filepath.Ext(filename), ".json") {
		return
	}
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			d.Detail = strings.TrimSpace(d.Detail + " The file is named .json but does not start with `{`, so it is read as HCL, as Nomad reads it; a JSON spec starts with `{` (JSON has no comments).")
			return
		}
	}
}

// startsAsJSONOnly says whether rest, a file's content past its leading white space, starts as
// a JSON value no HCL file starts with: an array, a number, or the word true, false or null
// alone (the file's one value). Anything else (an HCL name, a quoted name, a comment, a character JSON has no use for
// such as a no-break space pasted before the spec, nothing at all) is HCL, as Nomad reads it;
// read as JSON, such a file's snippet was masked as JSON, showing its HCL secrets block's values
// (TestValidateJSONNamedHCLStartingWithANonASCIICharacterDoesNotShowItsSecret), and an empty
// one got JSON's "ends prematurely", not "Empty spec" (TestValidateEmptyJSONFileSaysItIsEmpty).
func startsAsJSONOnly(rest []byte) bool {
	if len(rest) == 0 {
		return false
	}
	if c := rest[0]; c == '[' || c == '-' || '0' <= c && c <= '9' {
		return true
	}
	// The word alone, the whole file's one value: followed by more, it is HCL's (a file
	// starting `null secrets { ... }` read as JSON was masked as JSON, its HCL secrets shown:
	// TestValidateJSONNamedHCLStartingWithAJSONWordDoesNotShowItsSecret).
	for _, word := range []string{"true", "false", "null"} {
		if after, ok := bytes.CutPrefix(rest, []byte(word)); ok && len(bytes.TrimSpace(after)) == 0 {
			return true
		}
	}
	return false
}

// finishDiagnostics is how every diagnostic of a file leaves the parser: ranges fixed
// (fixRanges), hcl/json's errors past a string it cut short dropped (cutStringEchoes), an error at the end of a file that ends inside something open placed on it
// (unclosedAtEnd), HCL's false "Unterminated template string" beside the error it echoes
// dropped (unterminatedEchoes), a JSON comma missing placed (missingJSONComma), an argument
// without its value named (missingValue), words cut (cutWords), sensitive text their subjects
// cover kept out of their words (hideMasked), sorted.
func finishDiagnostics(diags hcl.Diagnostics, s *source) hcl.Diagnostics {
	for _, d := range diags {
		d.Summary, d.Detail = cutWords(d.Summary), cutWords(d.Detail)
	}
	return sortDiagnostics(hideMasked(unterminatedEchoes(missingValue(missingJSONComma(unclosedAtEnd(cutStringEchoes(fixRanges(diags, s.src, s.json), s), s), s), s)), s))
}

// sortDiagnostics orders diagnostics by position, so output is stable and reads top to
// bottom, and drops exact repeats.
func sortDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	var out hcl.Diagnostics
	for _, d := range diags {
		if len(out) > 0 && sameDiagnostic(d, out[len(out)-1]) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func sameDiagnostic(a, b *hcl.Diagnostic) bool {
	if a.Severity != b.Severity || a.Summary != b.Summary || a.Detail != b.Detail {
		return false
	}
	if a.Subject == nil || b.Subject == nil {
		return a.Subject == b.Subject
	}
	return *a.Subject == *b.Subject
}

// fixRanges pulls ranges that end past the file back onto its end and, for JSON, recomputes
// line and column from the byte offset: HCL's JSON scanner places an unterminated string one
// byte past the end of the input, or past a newline without counting the line. A native
// position whose line disagrees with its byte offset is recomputed too: the native scanner
// lets an invalid UTF-8 lead byte swallow the newline after it as one column of one line.
func fixRanges(diags hcl.Diagnostics, src []byte, json bool) hcl.Diagnostics {
	var m *offsetMap
	fix := func(p hcl.Pos) hcl.Pos {
		if m == nil {
			m = &offsetMap{src: src, lineStarts: lineStarts(src)}
		}
		if p.Byte <= len(src) && !json && p.Byte >= 0 && m.line(p.Byte) == p.Line {
			return p
		}
		return m.pos(min(max(p.Byte, 0), len(src)))
	}
	for _, d := range diags {
		for _, r := range []**hcl.Range{&d.Subject, &d.Context} {
			if *r == nil {
				continue
			}
			c := **r
			c.Start, c.End = fix(c.Start), fix(c.End)
			*r = &c
		}
	}
	return diags
}
