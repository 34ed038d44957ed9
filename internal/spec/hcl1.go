package spec

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Nomad reads volume specs with HCL1, which accepts things the HCL2 native parser rejects, and
// real specs use them (see shared/compat/nomad-specs): quoted argument names, map-typed blocks
// with quoted or dotted keys (`segments { "topology.x/zone" = "a" }`), block bodies on one line
// (`topology { segments { rack = "R1" } }`) and commas between body items. rewriteHCL1 turns
// such a file into HCL2 with a token-level rewrite and returns an offsetMap, so every
// diagnostic can be moved back onto the bytes the user wrote. It is only used when a plain
// HCL2 parse fails, so a file that is valid HCL2 is never rewritten.

// mapBlockNames are the spec attributes that hold string maps. HCL1 let them be written as
// blocks; rewritten, they become attributes whose value is an object, where any key is allowed.
var mapBlockNames = map[string]bool{
	"secrets": true, "parameters": true, "context": true, "segments": true, "env": true,
}

// edit replaces del bytes at off (in the original) with ins.
type edit struct {
	off, del int
	ins      string
	lit      bool // a number literal HCL1 reads and HCL2 does not, rewritten (hcl1number.go)
}

type frameKind uint8

const (
	frameBody     frameKind = iota // a block body (or the file): items separated by newlines
	frameExpr                      // inside (), [], {} of an expression, or a ${ } interpolation
	frameTemplate                  // inside a quoted string or heredoc
)

type bodyState uint8

const (
	stateItemStart bodyState = iota // at the start of an item: a name, a "}" or a newline
	stateExpr                       // in an attribute's value
	stateAfterItem                  // just after a block's (or map object's) closing brace
	stateJunk                       // something unrecognised: leave the rest of the line to the parser
)

type frame struct {
	kind  frameKind
	state bodyState
	open  int // token index of a body's opening brace

	// For the object a map block was turned into, or a map attribute's object: whether the next
	// token starts an item.
	isMap, itemStart bool

	// mapValue: in a body, the value of a map attribute (mapBlockNames) begins at the next
	// token: an object there is read as a map block's, its items side by side with no comma
	// as HCL1 reads them (`context = { a = "x" b = "y" }`), where HCL2 refused it
	// ("Missing attribute separator": TestMapAttributeWithoutSeparatorsIsRead).
	mapValue bool

	// valueEnd: the last token of the body or map object (a string's closing quote, a
	// bracket closed, a number, a name) may end a value, so a name that follows it on the
	// same line, with no comma, starts another item, as HCL1 reads it (nextItem).
	valueEnd bool
}

type rewriter struct {
	toks  hclsyntax.Tokens
	stack []frame
	edits []edit

	// A first pass counts, per body (keyed by its opening brace's token index, -1 for the
	// file), the attributes and map blocks of each name. A map block becomes an attribute
	// only when its name is alone in its body: `secrets = {...}` beside `secrets {...}` is
	// valid HCL2 that the decoder reports itself, but two attributes would not parse.
	counting bool
	counts   map[int]map[string]int

	src       []byte
	source    *source         // src's tokens and masked bytes
	diags     hcl.Diagnostics // numbers HCL1 refuses (hcl1number.go)
	numberEnd int             // the last token of the number rewritten last
	looked    int             // the last token number has looked at
}

// rewriteHCL1 returns the file rewritten into HCL2 and the map back to it, or ok=false when it
// found nothing to change, over its tokens, with the errors for the numbers HCL1 refuses
// (hcl1number.go); their words are rewritten to 0, so the parse goes on to find other errors.
func (s *source) rewriteHCL1() (out []byte, m *offsetMap, ok bool, diags hcl.Diagnostics) {
	src := s.src
	r := &rewriter{toks: s.tokens(), counting: true, counts: map[int]map[string]int{}, src: src, source: s}
	r.run()
	r.counting = false
	r.edits = r.edits[:0]
	r.run()
	if len(r.edits) == 0 {
		return nil, nil, false, nil
	}
	out, m = applyEdits(src, r.edits)
	m.rw = out
	return out, m, true, r.diags
}

func (r *rewriter) top() *frame { return &r.stack[len(r.stack)-1] }

func (r *rewriter) push(k frameKind, open int) {
	r.stack = append(r.stack, frame{kind: k, open: open})
}

func (r *rewriter) insert(off int, s string) { r.edits = append(r.edits, edit{off: off, ins: s}) }

func (r *rewriter) replace(t hclsyntax.Token, s string) {
	r.edits = append(r.edits, edit{off: t.Range.Start.Byte, del: len(t.Bytes), ins: s})
}

// endsLine reports whether t finishes a line: a newline, or a line comment, which absorbs its
// newline in HCL's lexer.
func endsLine(t hclsyntax.Token) bool {
	return t.Type == hclsyntax.TokenNewline ||
		t.Type == hclsyntax.TokenComment && bytes.HasSuffix(t.Bytes, []byte("\n"))
}

// nested tracks bracket and template nesting outside body context. It reports whether t
// opened or closed something.
func (r *rewriter) nested(t hclsyntax.Token, i int) bool {
	switch t.Type {
	case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
		hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
		r.push(frameExpr, i)
		return true
	case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
		r.push(frameTemplate, i)
		return true
	case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
		hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
		if r.top().kind != frameBody {
			r.stack = r.stack[:len(r.stack)-1]
			return true
		}
	}
	return false
}

func (r *rewriter) run() {
	r.stack = append(r.stack[:0], frame{kind: frameBody, open: -1})
	r.numberEnd, r.looked = -1, -1
	for i := 0; i < len(r.toks); i++ {
		t := r.toks[i]
		if i <= r.numberEnd && i > r.looked {
			continue // a rewritten number's other tokens: nothing but a value
		}
		if i > r.looked {
			// Once a token: one read again (i--, an item put on its own line) is not skipped
			// as part of a number, nor its number rewritten twice.
			r.numberEnd, r.looked = r.number(i), i
		}
		if r.top().kind != frameBody {
			if f := r.top(); f.isMap {
				r.mapItem(f, i)
			}
			depth := len(r.stack)
			r.nested(t, i)
			if len(r.stack) < depth {
				r.top().valueEnd = true // a string, list or object closed: a value may end here
			}
			continue
		}
		f := r.top()
		switch f.state {
		case stateItemStart:
			switch {
			case endsLine(t), t.Type == hclsyntax.TokenComment, t.Type == hclsyntax.TokenEOF:
			case t.Type == hclsyntax.TokenCBrace:
				r.closeBody(i)
			case t.Type == hclsyntax.TokenComma:
				r.replace(t, "\n")
			case t.Type == hclsyntax.TokenIdent, t.Type == hclsyntax.TokenOQuote:
				i = r.header(i)
			default:
				f.state = stateJunk
				r.nested(t, i)
			}
		case stateExpr, stateJunk:
			switch {
			case endsLine(t):
				f.state = stateItemStart
			case t.Type == hclsyntax.TokenComma && f.state == stateExpr:
				r.replace(t, "\n")
				f.state = stateItemStart
			case t.Type == hclsyntax.TokenCBrace:
				if f.state == stateExpr {
					r.insert(t.Range.Start.Byte, "\n")
				}
				r.closeBody(i)
			case f.state == stateExpr && f.valueEnd && r.nextItem(i, false):
				// Items side by side with no comma (`capability { access_mode = "..."
				// attachment_mode = "..." }`): HCL1, which has no line ends in its grammar,
				// reads the name after a value as the next item, and Nomad so reads the file;
				// HCL2 refuses it ("Missing newline after argument"). The item gets its line.
				r.insert(t.Range.Start.Byte, "\n")
				f.state, f.valueEnd = stateItemStart, false
				i--
			default:
				mapValue := f.mapValue && t.Type == hclsyntax.TokenOBrace
				if t.Type != hclsyntax.TokenComment {
					f.valueEnd = t.Type == hclsyntax.TokenNumberLit || t.Type == hclsyntax.TokenIdent || r.numberEnd > i
					f.mapValue = false
				}
				r.nested(t, i)
				if mapValue {
					r.top().isMap, r.top().itemStart = true, true
				}
			}
		case stateAfterItem:
			switch {
			case endsLine(t):
				f.state = stateItemStart
			case t.Type == hclsyntax.TokenComment, t.Type == hclsyntax.TokenEOF:
			case t.Type == hclsyntax.TokenComma:
				r.replace(t, "\n")
				f.state = stateItemStart
			case t.Type == hclsyntax.TokenCBrace:
				r.insert(t.Range.Start.Byte, "\n")
				r.closeBody(i)
			default:
				// Another item on the same line as a closing brace.
				r.insert(t.Range.Start.Byte, "\n")
				f.state = stateItemStart
				i--
			}
		}
	}
}

// closeBody handles the "}" at i in body context: it ends the body on its own line.
func (r *rewriter) closeBody(i int) {
	if len(r.stack) == 1 {
		r.top().state = stateJunk // a stray "}" at top level: the parser will say so
		return
	}
	f := r.top()
	prev := r.toks[i-1]
	if f.state == stateItemStart && i-1 != f.open && !endsLine(prev) {
		r.insert(r.toks[i].Range.Start.Byte, "\n")
	}
	r.stack = r.stack[:len(r.stack)-1]
	r.top().state = stateAfterItem
}

// mapItem tracks item starts in a map object and quotes a dotted key there: HCL1 read
// `a.b = "x"` as the key "a.b", HCL2 would take it for a reference.
func (r *rewriter) mapItem(f *frame, i int) {
	t := r.toks[i]
	start := f.itemStart
	if !start && f.valueEnd && r.nextItem(i, true) {
		// A key after a value on the same line, no comma (`secrets { user = "a" pass = "b" }`):
		// another item to HCL1, as in a body (run); the object's items need a line end between.
		r.insert(t.Range.Start.Byte, "\n")
		start = true
	}
	if t.Type != hclsyntax.TokenComment {
		f.valueEnd = t.Type == hclsyntax.TokenNumberLit || t.Type == hclsyntax.TokenIdent || r.numberEnd > i
	}
	f.itemStart = t.Type == hclsyntax.TokenComma || endsLine(t) ||
		t.Type == hclsyntax.TokenComment && start
	if !start || t.Type != hclsyntax.TokenIdent {
		return
	}
	k := i + 1
	for k+1 < len(r.toks) && r.toks[k].Type == hclsyntax.TokenDot && r.toks[k+1].Type == hclsyntax.TokenIdent {
		k += 2
	}
	if k == i+1 || k >= len(r.toks) || r.toks[k].Type != hclsyntax.TokenEqual {
		return
	}
	for j := i; j < k-1; j++ {
		if r.toks[j].Range.End.Byte != r.toks[j+1].Range.Start.Byte {
			return // "a . b": spaced out, not one name
		}
	}
	r.insert(t.Range.Start.Byte, `"`)
	r.insert(r.toks[k-1].Range.End.Byte, `"`)
}

// nextItem reports whether an item's header starts at i, one HCL1 reads after a value with no
// comma between: a name (or, in a map object, a dotted key) and "=", or, in a body, a name and
// labels and "{". Anything else after a value is left to the parser to refuse.
func (r *rewriter) nextItem(i int, inMap bool) bool {
	t := r.toks[i]
	if t.Type != hclsyntax.TokenIdent && t.Type != hclsyntax.TokenOQuote {
		return false
	}
	k, _, ok := r.nameUnit(i)
	if !ok {
		return false
	}
	if inMap {
		for t.Type == hclsyntax.TokenIdent && k+1 < len(r.toks) && r.toks[k].Type == hclsyntax.TokenDot && r.toks[k+1].Type == hclsyntax.TokenIdent {
			k += 2
		}
		return k < len(r.toks) && r.toks[k].Type == hclsyntax.TokenEqual
	}
	if k < len(r.toks) && r.toks[k].Type == hclsyntax.TokenEqual {
		return true
	}
	for {
		next, _, ok := r.nameUnit(k)
		if !ok {
			break
		}
		k = next
	}
	return k < len(r.toks) && r.toks[k].Type == hclsyntax.TokenOBrace
}

// nameUnit returns the index after the name or label starting at i (an identifier or a quoted
// string without interpolation) and, for a quoted one that is a valid identifier, its text.
func (r *rewriter) nameUnit(i int) (next int, quoted string, ok bool) {
	switch r.toks[i].Type {
	case hclsyntax.TokenIdent:
		return i + 1, "", true
	case hclsyntax.TokenOQuote:
		if i+2 < len(r.toks) && r.toks[i+1].Type == hclsyntax.TokenQuotedLit && r.toks[i+2].Type == hclsyntax.TokenCQuote {
			lit := string(r.toks[i+1].Bytes)
			if hclsyntax.ValidIdentifier(lit) {
				return i + 3, lit, true
			}
			return i + 3, "", true
		}
		if i+1 < len(r.toks) && r.toks[i+1].Type == hclsyntax.TokenCQuote {
			return i + 2, "", true
		}
	}
	return i, "", false
}

// header reads an item's name and labels starting at i, decides whether the item is an
// attribute, a map written as a block, or a block, makes the edits that turn it into HCL2,
// and returns the index of the last token it consumed.
func (r *rewriter) header(i int) int {
	f := r.top()
	// A new item: what ended the last one's value is not this one's. Left set, the string after
	// `name =` was taken for the next item's header when a block followed on the line
	// (`name = "db" capability { ... }`), and the rewrite refused a file Nomad reads
	// (TestStringValueThenBlockOnOneLineIsReadAsNomadReadsIt).
	f.valueEnd = false
	afterName, quoted, ok := r.nameUnit(i)
	if !ok {
		f.state = stateJunk
		r.nested(r.toks[i], i)
		return i
	}
	k := afterName
	for {
		next, _, ok := r.nameUnit(k)
		if !ok {
			break
		}
		k = next
	}
	if k >= len(r.toks) {
		f.state = stateJunk
		return len(r.toks) - 1
	}
	name := string(r.toks[i].Bytes)
	if quoted != "" {
		name = quoted
	}
	if r.counting && k == afterName && (r.toks[k].Type == hclsyntax.TokenEqual || r.toks[k].Type == hclsyntax.TokenOBrace) {
		if r.counts[f.open] == nil {
			r.counts[f.open] = map[string]int{}
		}
		r.counts[f.open][name]++
	}
	switch r.toks[k].Type {
	case hclsyntax.TokenEqual:
		if k != afterName {
			f.state = stateJunk
			return k
		}
		if quoted != "" {
			// "rack" = "R1" in a body: HCL1 allowed quoted argument names.
			r.replace(r.toks[i], "")
			r.replace(r.toks[i+2], "")
		}
		f.state, f.mapValue = stateExpr, mapBlockNames[name]
		return k
	case hclsyntax.TokenOBrace:
		nameTok := r.toks[i]
		if quoted != "" {
			// "capability" { ... }: HCL1 allowed a block's name quoted, as an argument's.
			r.replace(r.toks[i], "")
			r.replace(r.toks[i+2], "")
			nameTok = r.toks[i+2]
		}
		if k == afterName && (nameTok.Type == hclsyntax.TokenIdent || quoted != "") && mapBlockNames[name] &&
			(r.counting || r.counts[f.open][name] == 1) {
			// secrets { k = "v" } -> secrets = { k = "v" }: the body becomes an object, whose
			// keys may be quoted, dotted or comma-separated.
			r.insert(nameTok.Range.End.Byte, " =")
			f.state = stateAfterItem
			r.push(frameExpr, k)
			r.top().isMap, r.top().itemStart = true, true
			return k
		}
		f.state = stateAfterItem
		r.push(frameBody, k)
		if k+1 < len(r.toks) {
			if next := r.toks[k+1]; !endsLine(next) && next.Type != hclsyntax.TokenCBrace {
				r.insert(r.toks[k].Range.End.Byte, "\n")
			}
		}
		return k
	}
	f.state = stateJunk
	return k - 1
}

// segment is a run of the rewritten source: either copied from the original at orig, or
// inserted text that stands for the original position orig.
type segment struct {
	rw, orig, n int
	inserted    bool
	del         int // for a number rewritten (edit.lit): the length of the number as written
}

// offsetMap maps byte offsets in a rewritten source back to the original, and computes
// line and column there the way HCL does (columns count grapheme clusters).
type offsetMap struct {
	src        []byte // the original
	rw         []byte // the rewritten source
	rwLen      int
	segs       []segment
	lineStarts []int
	lits       map[int]numberLit // by offset in rw: the number literals rewritten, as written
	// at is the last grapheme cluster boundary pos counted to, and its column.
	at      struct{ line, byte, col int }
	scanned int // bytes pos has segmented, for tests
	looked  int // segments rwByte has looked at, for tests
}

func applyEdits(src []byte, edits []edit) ([]byte, *offsetMap) {
	sort.SliceStable(edits, func(a, b int) bool { return edits[a].off < edits[b].off })
	var out bytes.Buffer
	out.Grow(len(src) + 8*len(edits))
	m := &offsetMap{src: src}
	pos := 0
	copyTo := func(end int) {
		if end > pos {
			m.segs = append(m.segs, segment{rw: out.Len(), orig: pos, n: end - pos})
			out.Write(src[pos:end])
			pos = end
		}
	}
	for _, e := range edits {
		copyTo(e.off)
		if e.ins != "" {
			seg := segment{rw: out.Len(), orig: e.off, n: len(e.ins), inserted: true}
			if e.lit {
				if m.lits == nil {
					m.lits = map[int]numberLit{}
				}
				m.lits[out.Len()] = numberLit{n: len(e.ins), text: string(src[e.off : e.off+e.del])}
				seg.del = e.del // a range ending with the number ends where the number as written does
			}
			m.segs = append(m.segs, seg)
			out.WriteString(e.ins)
		}
		pos = e.off + e.del
	}
	copyTo(len(src))
	m.rwLen = out.Len()
	m.lineStarts = lineStarts(src)
	return out.Bytes(), m
}

// lineStarts returns the byte offset at which each line of src starts.
// It is made at its size, counted first: grown by append, the slice of a file of a million
// line ends took 80 MB.
func lineStarts(src []byte) []int {
	starts := make([]int, 1, bytes.Count(src, []byte{'\n'})+1)
	for i, b := range src {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// origByte maps a rewritten offset to the original. A range's end is exclusive, so end
// offsets on a boundary belong to the segment before it and start offsets to the one after.
func (m *offsetMap) origByte(off int, end bool) int {
	if off <= 0 {
		return 0
	}
	if off >= m.rwLen && !end {
		return len(m.src)
	}
	i := sort.Search(len(m.segs), func(i int) bool {
		s := m.segs[i]
		if end {
			return s.rw+s.n >= off
		}
		return s.rw+s.n > off
	})
	if i == len(m.segs) {
		return len(m.src)
	}
	s := m.segs[i]
	if s.inserted {
		if end && s.del > 0 && off == s.rw+s.n {
			return s.orig + s.del
		}
		return s.orig
	}
	return s.orig + off - s.rw
}

// rwByte maps an original offset to the rewritten source (for HCL's context lookups, one per
// diagnostic). The segments are in the order of both sources: the copied one that can hold off
// is the last that starts at or before it, or before the insertions there.
func (m *offsetMap) rwByte(off int) int {
	i := sort.Search(len(m.segs), func(i int) bool {
		m.looked++
		return m.segs[i].orig > off
	})
	for j := i - 1; j >= 0; j-- {
		m.looked++
		if s := m.segs[j]; !s.inserted {
			if off < s.orig+s.n {
				return s.rw + off - s.orig
			}
			break
		}
	}
	return m.rwLen
}

// line is the 1-based line of an original byte offset.
func (m *offsetMap) line(off int) int {
	return sort.Search(len(m.lineStarts), func(i int) bool { return m.lineStarts[i] > off })
}

// pos computes the HCL position of an original byte offset.
func (m *offsetMap) pos(off int) hcl.Pos {
	line := m.line(off)
	start := m.lineStarts[line-1]
	from, col := start, 1
	if m.at.line == line && m.at.byte >= start && m.at.byte <= off {
		// Go on from the last cluster boundary counted on this line: diagnostics come in
		// order, and a one-line JSON spec of 1 MiB may have 90,000 of them.
		from, col = m.at.byte, m.at.col
	}
	rest := m.src[from:off]
	m.scanned += len(rest)
	for len(rest) > 0 {
		adv, _, err := textseg.ScanGraphemeClusters(rest, true)
		if err != nil || adv == 0 {
			break
		}
		if adv < len(rest) { // a whole cluster, with text after it: a boundary to go on from
			m.at.line, m.at.byte, m.at.col = line, off-len(rest)+adv, col+1
		}
		rest = rest[adv:]
		col++
	}
	return hcl.Pos{Line: line, Column: col, Byte: off}
}

func (m *offsetMap) rng(r hcl.Range) hcl.Range {
	start := m.origByte(r.Start.Byte, false)
	end := start
	if r.End.Byte > r.Start.Byte {
		end = max(m.origByte(r.End.Byte, true), start)
	}
	return hcl.Range{Filename: r.Filename, Start: m.pos(start), End: m.pos(end)}
}

// mapDiagnostics moves every range in diags onto the original source, in place.
func (m *offsetMap) mapDiagnostics(diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Subject != nil {
			r := m.rng(*d.Subject)
			d.Subject = &r
		}
		if d.Context != nil {
			r := m.rng(*d.Context)
			d.Context = &r
		}
		// The expression's ranges are in rewritten coordinates; nothing renders it without an
		// EvalContext, and none is used, but drop it so nobody reads wrong positions from it.
		d.Expression = nil
		if d.Subject != nil {
			d.Detail = m.mapRangeText(d.Detail, d.Subject.Filename)
		}
	}
}

// mappedNav answers HCL's "in block ..." context lookups, which take original offsets, from
// the rewritten file's navigation.
type mappedNav struct {
	inner any
	m     *offsetMap
}

// ContextString implements what hcled.ContextString looks for.
func (n mappedNav) ContextString(offset int) string {
	if cs, ok := n.inner.(interface{ ContextString(int) string }); ok {
		return cs.ContextString(n.m.rwByte(offset))
	}
	return ""
}

// rangeText matches a range as hcl.Range.String renders it into a detail ("was already set
// at f.hcl:3,1-7"): line,column-column or line,column-line,column. Compiled on first use.
var rangeText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`:(\d+),(\d+)-(\d+)(?:,(\d+))?`) })

// mapRangeText rewrites ranges of filename quoted in a detail onto the original source.
func (m *offsetMap) mapRangeText(detail, filename string) string {
	prefix := filename
	if !strings.Contains(detail, prefix+":") {
		return detail
	}
	var out strings.Builder
	rest := detail
	for {
		i := strings.Index(rest, prefix+":")
		if i < 0 {
			break
		}
		loc := rangeText().FindStringSubmatchIndex(rest[i+len(prefix):])
		if loc == nil || loc[0] != 0 {
			out.WriteString(rest[:i+len(prefix)])
			rest = rest[i+len(prefix):]
			continue
		}
		num := func(g int) int {
			n, _ := strconv.Atoi(rest[i+len(prefix)+loc[2*g] : i+len(prefix)+loc[2*g+1]])
			return n
		}
		startLine, startCol, endLine, endCol := num(1), num(2), num(1), num(3)
		if loc[8] >= 0 {
			endLine, endCol = num(3), num(4)
		}
		r := m.rng(hcl.Range{
			Filename: filename,
			Start:    hcl.Pos{Byte: m.rwOffset(startLine, startCol)},
			End:      hcl.Pos{Byte: m.rwOffset(endLine, endCol)},
		})
		out.WriteString(rest[:i])
		out.WriteString(r.String())
		rest = rest[i+len(prefix)+loc[1]:]
	}
	out.WriteString(rest)
	return out.String()
}

// rwOffset finds the byte offset of a line and column in the rewritten source.
func (m *offsetMap) rwOffset(line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(m.rw[off:], '\n')
		if i < 0 {
			return len(m.rw)
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(m.rw) && m.rw[off] != '\n'; c++ {
		adv, _, err := textseg.ScanGraphemeClusters(m.rw[off:], true)
		if err != nil || adv == 0 {
			break
		}
		off += adv
	}
	return off
}
