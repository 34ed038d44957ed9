package spec

import (
	"bytes"
	"fmt"
	"math"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// HCL's parsers (native and JSON) are recursive descent: every bracket, brace, parenthesis,
// block, string, template sequence and unary operator is a level of Go stack, and a chain of
// binary operators or splats is a tree as deep as it is long, which evaluation walks
// recursively too. A file far under the 1 MiB read limit can therefore take gigabytes and
// seconds, and at about 100,000 levels kill the process with a stack overflow (which no
// recover catches). checkNesting bounds both before any parser sees the bytes, with one
// linear pass that keeps a stack of what is open. No spec needs more than a handful of
// levels or operators; the limits are far above that.
const (
	// MaxNesting bounds how deep brackets, braces, parentheses, blocks, strings, heredocs,
	// template sequences (${ and %{) and open template directives may nest.
	MaxNesting = 64
	// MaxOperators bounds the operators (unary, binary, conditional, splat) in one expression
	// at one level of nesting: between two separators (a comma, or a newline where newlines
	// end items).
	MaxOperators = 64
	// MaxTemplateParts bounds the pieces HCL's scanner cuts one string or heredoc into: it
	// ends a piece at each $ and % and each heredoc line, and its parser joins the pieces one
	// by one, copying all of them each time, in time growing with the square of their number
	// (a heredoc of 300,000 lines, 600 KB, took 9 minutes; a string of 20,000 "$ " 5 s). Each
	// $ or % counts two, each heredoc line one. A volume spec's values fit in 4 KiB (a PEM
	// certificate is some 60 lines), so no spec comes near.
	MaxTemplateParts = 256
)

// checkNesting returns one error diagnostic at the place where the file first nests deeper than
// MaxNesting or chains more than MaxOperators operators, or nil, lexing it (for a file with
// non-ASCII code) into the tokens the parse goes on with.
func (f *source) checkNesting() hcl.Diagnostics {
	filename, src := f.filename, f.src
	s := scanSource(f, MaxNesting, MaxOperators)
	if s.at < 0 {
		return nil
	}
	m := &offsetMap{src: src, lineStarts: lineStarts(src)}
	end := min(s.at+max(s.atLen, 1), len(src))
	rng := hcl.Range{Filename: filename, Start: m.pos(s.at), End: m.pos(end)}
	// volctl's words alone: hideMasked need not mask (lex) the file for them.
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng, Extra: ownWords{}}
	switch {
	case s.tooDeep:
		d.Summary = "Nesting too deep"
		d.Detail = fmt.Sprintf("This opens a level more than %d deep (brackets, braces, parentheses, blocks, strings and template sequences count). "+
			"No spec needs more than a few levels, so volctl stops reading the file here rather than risk running out of memory or stack: flatten the structure.", MaxNesting)
	case s.tooLong:
		d.Summary = "String too long"
		d.Detail = fmt.Sprintf("The string or heredoc this is in holds more than %d lines, or more than %d $ and %% signs. "+
			"HCL's parser takes time growing with the square of their number, and no spec value comes near (a map of values is at most 4 KiB), "+
			"so volctl stops reading the file here: shorten the value.", MaxTemplateParts, MaxTemplateParts/2)
	default:
		d.Summary = "Expression too long"
		d.Detail = fmt.Sprintf("This expression chains more than %d operators. "+
			"No spec needs more than a few, so volctl stops reading the file here rather than risk running out of memory or stack: write the value as a literal.", MaxOperators)
	}
	return hcl.Diagnostics{d}
}

type nestKind uint8

const (
	nestBody    nestKind = iota // the file's top level
	nestBrace                   // a block body or an object: { }
	nestBrack                   // [ ]
	nestParen                   // ( )
	nestSeq                     // a template sequence, ${ } or %{ }
	nestString                  // a quoted string
	nestHeredoc                 // a heredoc
)

type nestFrame struct {
	kind nestKind
	ops  int // operators since the last separator at this level

	// Brace frames: whether anything but whitespace or comments has been seen (start is
	// true until then), and whether the brace opened a for expression, where newlines do not
	// separate anything.
	start, isFor bool

	directives int    // template frames: %{ if } and %{ for } not yet ended
	parts      int    // template frames: the pieces HCL's scanner cuts it into, counted up
	marker     []byte // heredocs: the closing marker
	lineStart  bool   // heredocs: at the start of a line, which may be the marker
}

// nestScan is one pass of checkNesting. It mirrors the context switches of HCL's scanners
// (hclsyntax's scan_tokens.rl, and hcl/json's scanner) so that nothing the parser reads as
// code is skipped as a string or a comment; where it cannot be exact it errs towards counting
// more, never less. The tests compare its depth with one computed from hclsyntax's own tokens.
type nestScan struct {
	src        []byte
	stack      []nestFrame
	depth      int // open frames but the file, plus open template directives
	maxDepth   int
	maxOps     int
	limitDepth int
	limitOps   int
	limitParts int

	at, atLen int  // where a limit was passed (-1: nowhere), and the length to mark
	tooDeep   bool // the depth limit was passed
	tooLong   bool // the template parts limit was passed (neither: the operator limit)

	// nonASCII is set when the byte scan met a non-ASCII byte in code, and stopped: HCL's
	// scanner reads an identifier there whose characters may take in the bytes after a
	// malformed UTF-8 lead byte, quotes and newlines included, so only its own tokens say
	// where the identifier ends. Such a file is checked over hclsyntax's tokens instead.
	nonASCII bool
}

// scanSource scans the file and stops where a limit is first passed, over its tokens (f.tokens)
// where the byte scan leaves it to them: of a file past MaxItems, which checkItems refuses
// after, those up to the item past the limit.
func scanSource(f *source, limitDepth, limitOps int) *nestScan {
	s := newNestScan(f.src, limitDepth, limitOps)
	if f.json {
		s.json()
		return s
	}
	s.limitParts = MaxTemplateParts
	s.native()
	if s.nonASCII {
		s = newNestScan(f.src, limitDepth, limitOps)
		s.limitParts = MaxTemplateParts
		s.tokens(f.tokens())
	}
	return s
}

func newNestScan(src []byte, limitDepth, limitOps int) *nestScan {
	return &nestScan{src: src, stack: []nestFrame{{kind: nestBody}}, limitDepth: limitDepth, limitOps: limitOps, limitParts: math.MaxInt, at: -1}
}

// piece counts n more pieces of the string or heredoc at the top, the last at src[at:at+1].
func (s *nestScan) piece(at, n int) {
	f := s.top()
	f.parts += n
	if f.parts > s.limitParts && s.at < 0 {
		s.at, s.atLen, s.tooLong = at, 1, true
	}
}

func (s *nestScan) top() *nestFrame { return &s.stack[len(s.stack)-1] }

// push opens a frame at src[at:at+n].
func (s *nestScan) push(f nestFrame, at, n int) {
	s.stack = append(s.stack, f)
	s.deeper(at, n)
}

// deeper counts one more level, opened at src[at:at+n].
func (s *nestScan) deeper(at, n int) {
	s.depth++
	s.maxDepth = max(s.maxDepth, s.depth)
	if s.depth > s.limitDepth && s.at < 0 {
		s.at, s.atLen, s.tooDeep = at, n, true
	}
}

// pop closes the top frame (never the file's).
func (s *nestScan) pop() {
	if len(s.stack) == 1 {
		return
	}
	s.depth -= 1 + s.top().directives
	s.stack = s.stack[:len(s.stack)-1]
}

// operator counts an operator at src[at:at+n] in the current frame.
func (s *nestScan) operator(at, n int) {
	f := s.top()
	f.ops++
	s.maxOps = max(s.maxOps, f.ops)
	if f.ops > s.limitOps && s.at < 0 {
		s.at, s.atLen = at, n
	}
}

// native scans HCL native syntax.
func (s *nestScan) native() {
	for i := 0; i < len(s.src) && s.at < 0 && !s.nonASCII; {
		switch s.top().kind {
		case nestString:
			i = s.stringByte(i)
		case nestHeredoc:
			i = s.heredocByte(i)
		default:
			i = s.codeByte(i)
		}
	}
}

// commentEnd returns the end of the comment starting at i (a line comment ends before its
// newline), or -1 when none starts there. An unterminated /* is no comment: HCL's scanner
// reads it as the operators / and *.
func (s *nestScan) commentEnd(i int) int {
	src := s.src
	lineEnd := func(j int) int {
		if k := bytes.IndexByte(src[j:], '\n'); k >= 0 {
			return j + k
		}
		return len(src)
	}
	switch {
	case src[i] == '#':
		return lineEnd(i)
	case src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
		return lineEnd(i)
	case src[i] == '/' && i+1 < len(src) && src[i+1] == '*':
		if k := bytes.Index(src[i+2:], []byte("*/")); k >= 0 {
			return i + 2 + k + 2
		}
	}
	return -1
}

// skipTrivia returns the offset of the next byte at or after i that is not whitespace, a
// newline or a comment.
func (s *nestScan) skipTrivia(i int) int {
	for i < len(s.src) {
		switch s.src[i] {
		case ' ', '\t', '\r', '\n':
			i++
			continue
		}
		if e := s.commentEnd(i); e >= 0 {
			i = e
			continue
		}
		break
	}
	return i
}

// codeByte scans the token starting at src[i] outside strings and heredocs and returns the
// offset after it.
func (s *nestScan) codeByte(i int) int {
	src := s.src
	c := src[i]
	if e := s.commentEnd(i); e >= 0 {
		return e
	}
	f := s.top()
	if f.kind == nestBrace && f.start && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
		// `{ for k, v in m : k => v }` is an object for expression: newlines inside it are
		// not separators. When unsure (a name going on in non-ASCII), take it for one.
		f.start = false
		if bytes.HasPrefix(src[i:], []byte("for")) && (i+3 == len(src) || !isNameByte(src[i+3])) {
			f.isFor = true
		}
	}
	switch c {
	case '\n':
		s.newline()
	case ',':
		f.ops = 0
	case '"':
		s.push(nestFrame{kind: nestString}, i, 1)
	case '{':
		s.push(nestFrame{kind: nestBrace, start: true}, i, 1)
	case '}':
		s.closeBrace()
	case '(':
		s.push(nestFrame{kind: nestParen}, i, 1)
	case ')':
		if f.kind == nestParen {
			s.pop()
		}
	case '[':
		// A splat, [*], makes the expression one level deeper like an operator.
		if j := s.skipTrivia(i + 1); j < len(src) && src[j] == '*' {
			if k := s.skipTrivia(j + 1); k < len(src) && src[k] == ']' {
				s.operator(i, k+1-i)
				return k + 1
			}
		}
		s.push(nestFrame{kind: nestBrack}, i, 1)
	case ']':
		if f.kind == nestBrack {
			s.pop()
		}
	case '<':
		if n := s.heredocStart(i); n > 0 {
			s.push(nestFrame{kind: nestHeredoc, marker: s.heredocMarker(i, n), lineStart: true}, i, n)
			return i + n
		}
		s.operator(i, 1)
	case '=':
		if i+1 < len(src) && (src[i+1] == '=' || src[i+1] == '>') {
			if src[i+1] == '=' {
				s.operator(i, 2)
			}
			return i + 2
		}
	case '&', '|':
		if i+1 < len(src) && src[i+1] == c {
			s.operator(i, 2)
			return i + 2
		}
		s.operator(i, 1)
	case '+', '-', '*', '/', '%', '!', '?', '>':
		s.operator(i, 1)
	default:
		if c >= 0x80 {
			s.nonASCII = true
		}
	}
	return i + 1
}

// newline ends an item where newlines separate items: at the top level, in block bodies and
// in objects other than for expressions.
func (s *nestScan) newline() {
	if f := s.top(); f.kind == nestBody || f.kind == nestBrace && !f.isFor {
		f.ops = 0
	}
}

// closeBrace handles a "}" in code: like HCL's scanner, it ends the innermost template
// sequence when no brace opened since is still open, and otherwise that brace. Brackets and
// parentheses left open inside are closed with it.
func (s *nestScan) closeBrace() {
	for j := len(s.stack) - 1; j > 0; j-- {
		switch s.stack[j].kind {
		case nestBrace, nestSeq:
			for len(s.stack) > j {
				s.pop()
			}
			return
		case nestString, nestHeredoc:
			return
		}
	}
}

// heredocStart returns the length of a heredoc introducer (`<<EOT` or `<<-EOT` and the
// newline) at src[i:], or 0. A marker with non-ASCII letters is left to HCL's own scanner.
func (s *nestScan) heredocStart(i int) int {
	src := s.src
	if i+2 >= len(src) || src[i+1] != '<' {
		return 0
	}
	j := i + 2
	if src[j] == '-' {
		j++
	}
	start, ascii := j, true
	for j < len(src) && (isNameByte(src[j]) || src[j] >= 0x80) {
		ascii = ascii && src[j] < 0x80
		j++
	}
	if j == start || src[start] == '-' || src[start] >= '0' && src[start] <= '9' {
		return 0
	}
	if !ascii {
		s.nonASCII = true
		return 0
	}
	if j < len(src) && src[j] == '\r' {
		j++
	}
	if j >= len(src) || src[j] != '\n' {
		return 0
	}
	return j + 1 - i
}

// heredocMarker returns the closing marker of the introducer src[i:i+n].
func (s *nestScan) heredocMarker(i, n int) []byte {
	m := s.src[i+2 : i+n]
	m = bytes.TrimPrefix(m, []byte("-"))
	m = bytes.TrimSuffix(m, []byte("\n"))
	return bytes.TrimSuffix(m, []byte("\r"))
}

func isNameByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// stringByte scans inside a quoted string. A newline does not end it: HCL's scanner stays in
// the string (and the parser reports it unterminated).
func (s *nestScan) stringByte(i int) int {
	src := s.src
	switch src[i] {
	case '"':
		s.pop()
	case '\\':
		if i+1 < len(src) && src[i+1] != '\n' && src[i+1] != '\r' {
			return i + 2
		}
	case '$', '%':
		s.piece(i, 2) // the sign and the text after it
		return s.templateSeq(i)
	}
	return i + 1
}

// heredocByte scans inside a heredoc: its marker, alone on a line that begins in the heredoc
// (not after a template sequence), ends it.
func (s *nestScan) heredocByte(i int) int {
	src := s.src
	f := s.top()
	if f.lineStart {
		f.lineStart = false
		if k := bytes.IndexByte(src[i:], '\n'); k >= 0 && bytes.Equal(bytes.TrimSpace(src[i:i+k+1]), f.marker) {
			s.pop()
			return i + k // the newline ends the attribute in the code around
		}
	}
	switch src[i] {
	case '\n':
		f.lineStart = true
		s.piece(i, 1)
	case '$', '%':
		s.piece(i, 2)
		return s.templateSeq(i)
	}
	return i + 1
}

// templateSeq handles a "$" or "%" in a string or heredoc: "${" and "%{" open a template
// sequence, "$${" and "%%{" are escapes for the literal text.
func (s *nestScan) templateSeq(i int) int {
	src := s.src
	c := src[i]
	switch {
	case i+1 < len(src) && src[i+1] == '{':
		tmpl := s.top()
		if c == '%' {
			// %{ if } and %{ for } nest until their %{ endif } or %{ endfor }. Anything
			// but those words and else counts as opening one.
			j := i + 2
			if j < len(src) && src[j] == '~' {
				j++
			}
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r' || src[j] == '\n') {
				j++
			}
			k := j
			for k < len(src) && bytes.IndexByte([]byte(" \t\r\n~}"), src[k]) < 0 {
				k++
			}
			switch string(src[j:k]) {
			case "endif", "endfor":
				if tmpl.directives > 0 {
					tmpl.directives--
					s.depth--
				}
			case "else":
			default:
				tmpl.directives++
				s.deeper(i, 2)
			}
		}
		s.push(nestFrame{kind: nestSeq}, i, 2)
		return i + 2
	case i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
		return i + 3
	}
	return i + 1
}

// json scans JSON as hcl/json's scanner does: only strings hide brackets.
func (s *nestScan) json() {
	src := s.src
	for i := 0; i < len(src) && s.at < 0; {
		switch c := src[i]; c {
		case '"':
			i = jsonStringEnd(src, i)
			continue
		case '{':
			s.push(nestFrame{kind: nestBrace}, i, 1)
		case '[':
			s.push(nestFrame{kind: nestBrack}, i, 1)
		case '}', ']':
			if k := s.top().kind; c == '}' && k == nestBrace || c == ']' && k == nestBrack {
				s.pop()
			}
		}
		i++
	}
}

// jsonStringEnd returns the offset after the JSON string starting at src[i], as hcl/json's
// scanString ends it: at an unescaped quote (included) or a control character (excluded),
// moving over whole grapheme clusters.
func jsonStringEnd(src []byte, i int) int {
	i++
	escaping := false
	for i < len(src) {
		b := src[i]
		switch {
		case b == '\\':
			escaping = !escaping
			i++
		case b == '"':
			i++
			if !escaping {
				return i
			}
			escaping = false
		case b == '\n' || b == '\r' || b < 32 && escaping:
			return i
		case b < 32: // read as its escape (rawControlEdits)
			i++
			escaping = false
		default:
			adv := 1
			if b >= 0x80 || i+1 < len(src) && src[i+1] >= 0x80 {
				if n, _, err := textseg.ScanGraphemeClusters(src[i:], true); err == nil && n > 0 {
					adv = n
				}
			}
			i += adv
			escaping = false
		}
	}
	return i
}

// tokens checks a file over hclsyntax's own tokens (toks, the file's), for files the byte scan leaves to them
// (nonASCII): the same frames and counts, with HCL's scanner deciding what each byte is.
func (s *nestScan) tokens(toks hclsyntax.Tokens) {
	// next returns the index of the next token after i that is not a newline or comment.
	next := func(i int) int {
		for i++; i < len(toks) && (toks[i].Type == hclsyntax.TokenNewline || toks[i].Type == hclsyntax.TokenComment); i++ {
		}
		return i
	}
	is := func(i int, ty hclsyntax.TokenType, text string) bool {
		return i < len(toks) && toks[i].Type == ty && (text == "" || string(toks[i].Bytes) == text)
	}
	// popTo pops down to the nearest frame of a kind in want, unless one in stop comes first.
	popTo := func(want, stop func(nestKind) bool) bool {
		for j := len(s.stack) - 1; j > 0; j-- {
			switch k := s.stack[j].kind; {
			case want(k):
				for len(s.stack) > j {
					s.pop()
				}
				return true
			case stop(k):
				return false
			}
		}
		return false
	}
	brace := func(k nestKind) bool { return k == nestBrace }
	seq := func(k nestKind) bool { return k == nestSeq }
	template := func(k nestKind) bool { return k == nestString || k == nestHeredoc }
	seqOrTemplate := func(k nestKind) bool { return seq(k) || template(k) }
	for i := 0; i < len(toks) && s.at < 0; i++ {
		t := toks[i]
		at, n := t.Range.Start.Byte, len(t.Bytes)
		switch t.Type {
		case hclsyntax.TokenNewline:
			s.newline()
		case hclsyntax.TokenComment:
			if bytes.HasSuffix(t.Bytes, []byte("\n")) {
				s.newline()
			}
		case hclsyntax.TokenComma:
			s.top().ops = 0
		case hclsyntax.TokenOBrace:
			s.push(nestFrame{kind: nestBrace, isFor: is(next(i), hclsyntax.TokenIdent, "for")}, at, n)
		case hclsyntax.TokenCBrace:
			popTo(brace, seqOrTemplate)
		case hclsyntax.TokenTemplateSeqEnd:
			// "~}" always ends a sequence token, even where it closes a brace.
			popTo(func(k nestKind) bool { return brace(k) || seq(k) }, template)
		case hclsyntax.TokenOParen:
			s.push(nestFrame{kind: nestParen}, at, n)
		case hclsyntax.TokenCParen:
			if s.top().kind == nestParen {
				s.pop()
			}
		case hclsyntax.TokenOBrack:
			if j := next(i); is(j, hclsyntax.TokenStar, "") && is(next(j), hclsyntax.TokenCBrack, "") {
				s.operator(at, n)
				i = next(j)
				continue
			}
			s.push(nestFrame{kind: nestBrack}, at, n)
		case hclsyntax.TokenCBrack:
			if s.top().kind == nestBrack {
				s.pop()
			}
		case hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit:
			if k := s.top().kind; k == nestString || k == nestHeredoc {
				s.piece(at, 1)
			}
		case hclsyntax.TokenOQuote:
			s.push(nestFrame{kind: nestString}, at, n)
		case hclsyntax.TokenOHeredoc:
			s.push(nestFrame{kind: nestHeredoc}, at, n)
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			popTo(template, seq)
		case hclsyntax.TokenTemplateInterp:
			s.push(nestFrame{kind: nestSeq}, at, n)
		case hclsyntax.TokenTemplateControl:
			if tmpl := s.top(); tmpl.kind == nestString || tmpl.kind == nestHeredoc {
				switch j := next(i); {
				case is(j, hclsyntax.TokenIdent, "endif"), is(j, hclsyntax.TokenIdent, "endfor"):
					if tmpl.directives > 0 {
						tmpl.directives--
						s.depth--
					}
				case is(j, hclsyntax.TokenIdent, "else"):
				default:
					tmpl.directives++
					s.deeper(at, n)
				}
			}
			s.push(nestFrame{kind: nestSeq}, at, n)
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
			hclsyntax.TokenPercent, hclsyntax.TokenBang, hclsyntax.TokenQuestion,
			hclsyntax.TokenLessThan, hclsyntax.TokenGreaterThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThanEq, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
			hclsyntax.TokenAnd, hclsyntax.TokenOr:
			s.operator(at, n)
		}
	}
}
