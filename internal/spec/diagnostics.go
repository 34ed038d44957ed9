package spec

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcled"
	"github.com/mitchellh/go-wordwrap"
)

// DiagnosticWriter returns a writer that renders diagnostics of the files this Parser has read
// and reads next as text in the style of HCL's own (hcl.NewDiagnosticTextWriter), with two
// differences: the location reads FILE:LINE:COLUMN, and without colour the offending source is
// marked with a line of carets, since underlining needs a terminal. width wraps the detail
// text (0: no wrapping). Snippets show each file's sensitive values masked, with the mask its
// parse made.
func (p *Parser) DiagnosticWriter(w io.Writer, width uint, color bool) hcl.DiagnosticWriter {
	dw := newDiagnosticWriter(w, p.files, width, color)
	dw.sources = p.sources
	return dw
}

// newDiagnosticWriter is a DiagnosticWriter over files, the original sources by name, masking
// each file itself.
func newDiagnosticWriter(w io.Writer, files map[string]*hcl.File, width uint, color bool) *diagnosticWriter {
	return &diagnosticWriter{w: w, files: files, width: width, color: color}
}

// WriteDiagnostics renders diags with the sources this Parser has read.
func (p *Parser) WriteDiagnostics(w io.Writer, diags hcl.Diagnostics, width uint, color bool) error {
	return p.DiagnosticWriter(w, width, color).WriteDiagnostics(diags)
}

type diagnosticWriter struct {
	w     io.Writer
	files map[string]*hcl.File
	width uint
	color bool

	sources  map[string]*source // a Parser's files, masked as its parse masked them
	redacted map[string][]byte  // each other file's source with secrets masked
	starts   map[string][]int   // each file's line starts
	visited  int                // bytes of the source lines looked at, for tests
}

// source returns the file's bytes with sensitive values masked (see redactSource), those of
// src[:need] at least (a file of this Parser's: source.redactedTo).
func (dw *diagnosticWriter) source(name string, file *hcl.File, need int) []byte {
	if s := dw.sources[name]; s != nil && len(s.src) == len(file.Bytes) && (len(s.src) == 0 || &s.src[0] == &file.Bytes[0]) {
		return s.redactedTo(need) // the bytes the parse read and masked
	}
	if src, ok := dw.redacted[name]; ok {
		return src
	}
	if dw.redacted == nil {
		dw.redacted = map[string][]byte{}
	}
	src := redactSource(file.Bytes, isJSON(name, file.Bytes))
	dw.redacted[name] = src
	return src
}

const (
	ansiRed       = "\x1b[31m"
	ansiYellow    = "\x1b[33m"
	ansiUnderline = "\x1b[1;4m"
	ansiReset     = "\x1b[0m"
)

// WriteDiagnostics writes what Shown keeps of one file's diagnostics.
func (dw *diagnosticWriter) WriteDiagnostics(diags hcl.Diagnostics) error {
	for _, d := range Shown(diags) {
		if err := dw.WriteDiagnostic(d); err != nil {
			return err
		}
	}
	return nil
}

func (dw *diagnosticWriter) WriteDiagnostic(d *hcl.Diagnostic) error {
	var b strings.Builder
	severity, colour := "Error", ansiRed
	if d.Severity == hcl.DiagWarning {
		severity, colour = "Warning", ansiYellow
	}
	// The summary and detail may word what a spec or its file's name holds (the duplicate-ID
	// error names both files; a file name comes from wherever the files did): escaped as the
	// source lines are, but the newlines between their lines.
	summary := EscapeLines(d.Summary)
	if dw.color {
		fmt.Fprintf(&b, "%s%s%s: %s\n\n", colour, severity, ansiReset, summary)
	} else {
		fmt.Fprintf(&b, "%s: %s\n\n", severity, summary)
	}
	if d.Subject != nil {
		dw.snippet(&b, d)
	}
	if d.Detail != "" {
		detail := d.Detail
		if dw.width > 0 {
			detail = wordwrap.WrapString(detail, dw.width)
		}
		fmt.Fprintf(&b, "%s\n\n", EscapeLines(detail))
	}
	_, err := io.WriteString(dw.w, b.String())
	return err
}

// snippet writes the "on FILE:LINE:COL" line and the source lines the diagnostic covers.
func (dw *diagnosticWriter) snippet(b *strings.Builder, d *hcl.Diagnostic) {
	subject := *d.Subject
	loc := fmt.Sprintf("%s:%d:%d", EscapeControl(subject.Filename), subject.Start.Line, subject.Start.Column)
	file := dw.files[subject.Filename]
	if file == nil || file.Bytes == nil {
		fmt.Fprintf(b, "  on %s:\n  (source code not available)\n\n", loc)
		return
	}
	// The context names the enclosing top-level block. Maps are left out: written as blocks
	// they would be named, as attributes (HCL2, JSON, rewritten HCL1) they would not.
	if ctx := hcled.ContextString(file, subject.Start.Byte); ctx != "" && !mapBlockNames[ctx] {
		loc += ", in " + ctx
	}
	fmt.Fprintf(b, "  on %s:\n", loc)

	show := subject
	if d.Context != nil {
		show = hcl.RangeOver(show, *d.Context)
	}
	// An empty range still deserves a mark: widen it to one character.
	highlight := subject
	if highlight.Empty() {
		highlight.End.Byte++
		highlight.End.Column++
	}
	if show.Empty() {
		show.End.Byte++
		show.End.Column++
	}
	src := dw.source(subject.Filename, file, snippetReach(d))
	// The lines from the first shown to the last, not the whole file, and by bytes, without
	// the columns hcl.RangeScanner counts: a file of many diagnostics (140,000 unknown
	// arguments fit in the 1 MiB read limit, or 90,000 on one line of JSON) would cost a
	// pass over the file, or the line, each (TestManyDiagnosticsRenderInLinearTime). The
	// ranges' lines agree with their bytes (fixRanges).
	starts := dw.lineStarts(subject.Filename, src)
	lineNo := min(max(show.Start.Line, 1), len(starts))
	from := starts[lineNo-1]
	sure := from <= show.Start.Byte && (lineNo == len(starts) || starts[lineNo] > show.Start.Byte)
	if !sure { // a line that disagrees with its byte: from the start
		lineNo, from = 1, 0
	}
	for ; from <= len(src) && from <= show.End.Byte; lineNo++ {
		// A line is looked at from what is shown to a few KiB past it: a longer one is cut
		// there anyway (snippetMaxLine), and a one-line JSON spec of 1 MiB may have 90,000
		// diagnostics.
		scan := from
		if sure && lineNo == show.Start.Line {
			scan = max(from, min(show.Start.Byte, len(src)))
		}
		limit := min(len(src), max(show.End.Byte, scan)+snippetLook)
		end, next := limit, limit+1
		if i := bytes.IndexByte(src[scan:limit], '\n'); i >= 0 {
			end, next = scan+i, scan+i+1
		} else if limit < len(src) {
			next = limit // past show.End: the loop ends at the next line
		}
		dw.visited += end - scan
		text := bytes.TrimSuffix(src[from:end], []byte("\r")) // as bufio.ScanLines
		line := hcl.Range{Filename: subject.Filename,
			Start: hcl.Pos{Line: lineNo, Byte: from}, End: hcl.Pos{Line: lineNo, Byte: from + len(text)}}
		from = next
		if !line.Overlaps(show) {
			continue
		}
		before, marked, after := line.PartitionAround(highlight)
		prefix := fmt.Sprintf("%4d: ", line.Start.Line)
		if marked.Empty() {
			text, cut := head(text, snippetMaxLine)
			fmt.Fprintf(b, "%s%s%s\n", prefix, sourceText(text), cut)
			continue
		}
		// A line over snippetMaxLine is cut around the marked text (a one-line JSON spec may
		// be a megabyte long). Escaped before the carets are counted, so that they sit under
		// the escaped text.
		preText, preCut, midText, midCut, postText, postCut := before.SliceBytes(src), "", marked.SliceBytes(src), "", after.SliceBytes(src), ""
		if longerThan(text, snippetMaxLine) {
			preText, preCut = tail(preText, snippetAround)
			midText, midCut = head(midText, snippetMarked)
			postText, postCut = head(postText, snippetAround)
		}
		pre, mid, post := preCut+sourceText(preText), sourceText(midText)+midCut, sourceText(postText)+postCut
		if dw.color {
			fmt.Fprintf(b, "%s%s%s%s%s%s\n", prefix, pre, ansiUnderline, mid, ansiReset, post)
			continue
		}
		fmt.Fprintf(b, "%s%s%s%s\n", prefix, pre, mid, post)
		// Under the text before the mark, its tabs and a space for each cell it takes on a
		// terminal (a CJK character two, a combining mark none); a caret for each cell of it.
		b.WriteString(strings.Repeat(" ", len(prefix)))
		for i, part := range strings.Split(pre, "\t") {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(strings.Repeat(" ", ansi.StringWidth(part)))
		}
		b.WriteString(strings.Repeat("^", max(1, ansi.StringWidth(mid))))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

// How much of a source line a diagnostic quotes: a line of up to snippetMaxLine characters
// whole; of a longer one, the marked text's first snippetMarked characters and snippetAround
// on either side of it (a line without marked text, its first snippetMaxLine). cutMark stands
// for what is left out.
const (
	snippetMaxLine = 512
	snippetAround  = 100
	snippetMarked  = 200
	cutMark        = "..."
)

// snippetLook is how far past what a snippet shows it reads the source for the end of its last
// line: a longer line is cut anyway (snippetMaxLine characters, 4 bytes at most each).
const snippetLook = 4*snippetMaxLine + 4

// snippetReach is the end of the source a snippet of d reads: to snippetLook past what it shows
// (its subject and context, an empty one widened to a character).
func snippetReach(d *hcl.Diagnostic) int {
	end := d.Subject.End.Byte
	if d.Context != nil {
		end = max(end, d.Context.End.Byte)
	}
	return end + 1 + snippetLook
}

// head is b's first n characters, and cutMark when it left some out.
func head(b []byte, n int) ([]byte, string) {
	i := 0
	for ; n > 0 && i < len(b); n-- {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	if i == len(b) {
		return b, ""
	}
	return b[:i], cutMark
}

// longerThan reports whether b holds more than n characters, looking at 4n bytes at most.
func longerThan(b []byte, n int) bool {
	return len(b) > 4*n || len(b) > n && utf8.RuneCount(b) > n
}

// lineStarts returns where each line of a file's source starts, worked out once per file.
func (dw *diagnosticWriter) lineStarts(name string, src []byte) []int {
	if s, ok := dw.starts[name]; ok {
		return s
	}
	if dw.starts == nil {
		dw.starts = map[string][]int{}
	}
	s := lineStarts(src)
	dw.starts[name] = s
	return s
}

// tail is b's last n characters, and cutMark when it left some out.
func tail(b []byte, n int) ([]byte, string) {
	i := len(b)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRune(b[:i])
		i -= size
	}
	if i == 0 {
		return b, ""
	}
	return b[i:], cutMark
}

// sourceText is a piece of a source line as a diagnostic shows it: its control characters
// escaped (EscapeControl) but its tabs, which the carets' line repeats to stay aligned. A spec
// file comes from anywhere, and an escape sequence in a string or a comment must not reach the
// terminal.
func sourceText(b []byte) string {
	parts := strings.Split(string(b), "\t")
	for i, p := range parts {
		parts[i] = EscapeControl(p)
	}
	return strings.Join(parts, "\t")
}

// Cut shortens text from outside volctl (a plugin's message, what Nomad answered) to at most n
// bytes, on a rune boundary, saying how many bytes were left out: "… (1044480 bytes more)".
// Text that fits is returned as it is. Anything to be replaced in the text (a secret) must be
// replaced before the cut, or part of it could be left at the cut where no scrubber finds it.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:n], len(s)-n)
}

// EscapeLines is s with every control character but the newlines between its lines, and the
// tabs that indent a line, written as EscapeControl writes it: for messages of more than one
// line (an error joining several, a diagnostic's wrapped detail) that word text from outside
// volctl. An indenting tab moves the cursor only, and cobra's "Did you mean this?" indents each
// suggestion with one, which escaped would read "\tvolume".
func EscapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		text := strings.TrimLeft(l, "\t")
		lines[i] = l[:len(l)-len(text)] + EscapeControl(text)
	}
	return strings.Join(lines, "\n")
}

// EscapeControl writes each control character in s (C0, newline and tab included, DEL, C1),
// each bidi embedding, override and isolate (U+202A..U+202E, U+2066..U+2069: raw, a terminal
// that does bidi lays out the rest of the line reordered, so text could make the words after
// it read as others), each character that shows as nothing (IsInvisible: "db\u200b" or
// "db\ufe0f" would read as "db") and each byte that is not UTF-8 as strconv.Quote writes it
// ("\x1b", "\n", "\u009b", "\u202e", "\u200b", "\U000e0100", "\xff"), and
// leaves the rest, non-ASCII letters and backslashes included, as it is: text from outside
// volctl made fit for a terminal. The command line shows plugins' data through it
// (display.Escape), and diagnostics the source lines of spec files.
func EscapeControl(s string) string {
	// Most text is printable ASCII: skip it a byte at a time (a table of 10,000 volumes passes
	// every cell through here), and look at runes only from the first byte that is not.
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) || !strings.ContainsFunc(s[i:], isControl) && utf8.ValidString(s[i:]) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case isControl(r):
			q := strconv.QuoteRuneToASCII(r) // not QuoteRune: a mark (U+FE0F) or a filler (U+3164) is printable to it
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// isControl reports a C0 or C1 control character, DEL, a bidi embedding, override or
// isolate (IsBidiControl), or a character that shows as nothing (IsInvisible).
func isControl(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || IsBidiControl(r) || IsInvisible(r)
}

// IsInvisible reports a character a terminal shows as nothing, or as not itself, which a
// display writes as an escape: ShowsAsNothing's, save the joiners (ZWJ, ZWNJ), which shape
// emoji and the scripts written with them, and the bidi marks (LRM, RLM, ALM), which only act
// on the characters beside them. Printed raw, a plugin's node ID "n1\u200b" or
// "n1\u034f" reads as "n1", and a topology or claim refused over the difference names two
// alike.
func IsInvisible(r rune) bool {
	switch r {
	case 0x200c, 0x200d, 0x200e, 0x200f, 0x061c:
		return false
	}
	return ShowsAsNothing(r)
}

// ShowsAsNothing is the one predicate of what a reader does not see as a character of its own
// (the scrubber's view of a text, csi's shownView, leaves each out; the displays escape it:
// IsInvisible): Unicode's Default_Ignorable_Code_Point set (zero width spaces and joiners, the
// bidi marks and controls, soft hyphen, COMBINING GRAPHEME JOINER, the variation selectors, the
// Hangul fillers, the invisible operators, byte order mark, tags, and the code points Unicode
// keeps for more of them), and every other format character (Cf: a terminal draws most as
// nothing, or as a box). The controls (C0, DEL, C1) are each caller's.
func ShowsAsNothing(r rune) bool {
	if r < 0xad {
		return false
	}
	for _, g := range ignorable {
		if r < g[0] {
			break
		}
		if r <= g[1] {
			return true
		}
	}
	return unicode.Is(unicode.Cf, r)
}

// ignorable are the ranges of Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt,
// Unicode 15), in order.
var ignorable = [...][2]rune{
	{0x00ad, 0x00ad}, {0x034f, 0x034f}, {0x061c, 0x061c}, {0x115f, 0x1160}, {0x17b4, 0x17b5},
	{0x180b, 0x180f}, {0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x206f}, {0x3164, 0x3164},
	{0xfe00, 0xfe0f}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3},
	{0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
}

// InvisibleLeads says which bytes begin the UTF-8 of a character ShowsAsNothing reports: a
// text with none of them holds none (a pre-check that skips decoding). Made on first use from
// the ranges themselves, not at start-up.
var InvisibleLeads = sync.OnceValue(func() *[256]bool {
	var t [256]bool
	mark := func(lo, hi rune) {
		// The lead byte grows with the code point: every byte between the ends' leads begins one.
		var a, b [utf8.UTFMax]byte
		utf8.EncodeRune(a[:], lo)
		utf8.EncodeRune(b[:], hi)
		for c := int(a[0]); c <= int(b[0]); c++ {
			t[c] = true
		}
	}
	for _, g := range ignorable {
		mark(g[0], g[1])
	}
	for _, g := range unicode.Cf.R16 {
		mark(rune(g.Lo), rune(g.Hi))
	}
	for _, g := range unicode.Cf.R32 {
		mark(rune(g.Lo), rune(g.Hi))
	}
	return &t
})

// IsBidiControl reports Unicode's explicit bidi formatting characters that reorder the text
// after them: LRE, RLE, PDF, LRO, RLO (U+202A..U+202E) and LRI, RLI, FSI, PDI
// (U+2066..U+2069). The marks (LRM, RLM, ALM) only act on the characters beside them and are
// left alone.
func IsBidiControl(r rune) bool { return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 }

// JSONDiagnostic is the JSON form of one diagnostic, as `volctl validate --json` prints it
// (docs/json.md).
type JSONDiagnostic struct {
	File     string     `json:"file"`
	Severity string     `json:"severity"` // "error" or "warning"
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail"`
	Range    *JSONRange `json:"range,omitempty"`
}

// JSONRange is a source range: start inclusive, end exclusive.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is a position: line and column from 1 (columns count characters), byte from 0.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONDiagnostics converts what Shown keeps of the diagnostics of one file. It never returns
// nil, so an empty result marshals as [].
func JSONDiagnostics(file string, diags hcl.Diagnostics) []JSONDiagnostic {
	diags = Shown(diags)
	out := make([]JSONDiagnostic, 0, len(diags))
	for _, d := range diags {
		j := JSONDiagnostic{File: file, Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			j.Severity = "warning"
		}
		if r := d.Subject; r != nil {
			j.Range = &JSONRange{
				Filename: r.Filename,
				Start:    JSONPos{Line: r.Start.Line, Column: r.Start.Column, Byte: r.Start.Byte},
				End:      JSONPos{Line: r.End.Line, Column: r.End.Column, Byte: r.End.Byte},
			}
		}
		out = append(out, j)
	}
	return out
}

// MaxShownDiagnostics is how many of one file's diagnostics a report shows. A file within the
// 1 MiB read limit may hold 100,000 problems (an unknown argument a line): printed, 15 MB of
// text or 42 MB of JSON, where the first few say what is wrong (the same mistake, often) and
// the rest scroll them away.
const MaxShownDiagnostics = 100

// Shown is what a report shows of one file's diagnostics (sorted by position, as the parser
// leaves them): all of them up to MaxShownDiagnostics, else the first MaxShownDiagnostics and
// one more at the first of the rest that counts them, an error when any of them is one, so
// that whoever reads only severities still finds the file invalid. Whether a file is valid
// is never judged from what it keeps: callers ask the whole list (HasErrors).
func Shown(diags hcl.Diagnostics) hcl.Diagnostics {
	if len(diags) <= MaxShownDiagnostics {
		return diags
	}
	rest := diags[MaxShownDiagnostics:]
	errs := 0
	for _, d := range rest {
		if d.Severity == hcl.DiagError {
			errs++
		}
	}
	more := &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "More diagnostics not shown", Subject: rest[0].Subject}
	if errs > 0 {
		more.Severity = hcl.DiagError
	}
	var counts []string
	if errs > 0 {
		counts = append(counts, plural(errs, "more error", "more errors"))
	}
	if warns := len(rest) - errs; warns > 0 {
		counts = append(counts, plural(warns, "more warning", "more warnings"))
	}
	more.Detail = fmt.Sprintf("This file has %s from here on, not shown: only the first %d diagnostics of a file are. Fix those and run the command again to see the rest.",
		strings.Join(counts, " and "), MaxShownDiagnostics)
	return append(diags[:MaxShownDiagnostics:MaxShownDiagnostics], more)
}

// plural is n with the singular or the plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// detailWordMax is the longest word (run of characters without white space) a diagnostic's
// summary or detail keeps whole: more than any value this package quotes (shown: at most
// detailValueMax characters, each escaped in at most 10). HCL's own diagnostics quote what
// they refuse in full ("An argument named "…" is not expected here."), and an argument name
// can be as long as the file.
const detailWordMax = 2500

// cutWords is s with each word over detailWordMax characters cut to its first detailValueMax,
// cutMark and how many bytes were left out.
func cutWords(s string) string { return CutWords(s, detailWordMax) }

// CutWords is s with each word (a run of characters without white space) over maxWord characters
// cut to its first detailValueMax, cutMark and how many bytes it left out: for text that
// quotes what it was given whole (a value typed, a plugin's ID, HCL's own diagnostics).
// Anything to be replaced in s (a secret) must be replaced first, as for Cut.
func CutWords(s string, maxWord int) string {
	if utf8.RuneCountInString(s) <= maxWord {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			i = len(s)
		}
		word := s[:i]
		if utf8.RuneCountInString(word) > maxWord {
			h, _ := head([]byte(word), detailValueMax)
			fmt.Fprintf(&b, "%s%s (%d more bytes)", h, cutMark, len(word)-len(h))
		} else {
			b.WriteString(word)
		}
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
		if j < 0 {
			j = len(s)
		}
		b.WriteString(s[:j])
		s = s[j:]
	}
	return b.String()
}

// MaxListedDiagnostics bounds the diagnostics one report lists over all its files (validate
// --json): MaxShownDiagnostics bounds each file's, but a command may be given thousands of
// files, and the array is held whole until it is written.
const MaxListedDiagnostics = 1000

// DiagnosticList gathers the JSON diagnostics of several files for one report: each file's
// Shown, up to MaxListedDiagnostics in all, then one more that counts the rest (errors,
// warnings, the files they are in) where the first of them is, an error when any of them is
// one, as Shown's does for one file. Whether a file is valid is still judged from the whole
// list of its diagnostics.
type DiagnosticList struct {
	listed      []JSONDiagnostic
	first       *JSONDiagnostic // the first left out
	errs, warns int
	files       int // the files any left out are in
}

// Add lists file's diagnostics, or counts them once the list is full.
func (l *DiagnosticList) Add(file string, diags hcl.Diagnostics) {
	room := 0
	if l.first == nil {
		shown := JSONDiagnostics(file, diags)
		room = MaxListedDiagnostics - len(l.listed)
		if len(shown) <= room {
			l.listed = append(l.listed, shown...)
			return
		}
		// room < len(shown) <= MaxShownDiagnostics+1: the first room shown are diags[:room].
		l.listed = append(l.listed, shown[:room]...)
		l.first = &JSONDiagnostics(file, diags[room:room+1])[0]
	}
	if len(diags) > room {
		l.files++
	}
	for _, d := range diags[min(room, len(diags)):] {
		if d.Severity == hcl.DiagError {
			l.errs++
		} else {
			l.warns++
		}
	}
}

// List is what was listed, and the diagnostic counting what was not.
func (l *DiagnosticList) List() []JSONDiagnostic {
	if l.first == nil {
		return append([]JSONDiagnostic{}, l.listed...) // [] in JSON when every file is valid, not null
	}
	more := *l.first
	more.Severity, more.Summary = "warning", "More diagnostics not shown"
	if l.errs > 0 {
		more.Severity = "error"
	}
	var counts []string
	if l.errs > 0 {
		counts = append(counts, plural(l.errs, "more error", "more errors"))
	}
	if l.warns > 0 {
		counts = append(counts, plural(l.warns, "more warning", "more warnings"))
	}
	more.Detail = fmt.Sprintf("There are %s in %s from here on, not shown: only the first %d diagnostics of one command are. Give fewer files at a time, or fix those and run the command again to see the rest.",
		strings.Join(counts, " and "), plural(l.files, "file", "files"), MaxListedDiagnostics)
	return append(l.listed, more)
}
