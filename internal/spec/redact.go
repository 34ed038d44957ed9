package spec

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Diagnostic snippets echo the spec's source, and a line of a secrets map or of mount_flags
// holds sensitive values. Before a snippet is printed, redactSource masks every value in
// secrets, env and mount_flags with '*', byte for byte, so positions and caret marks stay
// where they were: each string whole, template sequences (`${...}`, `%{...}`) and the names
// in them included, since a secret may hold what only looks like one; each heredoc's body;
// each number and bare name that is not a key. It works on tokens, not on a parsed body, so it
// also covers files with syntax errors.

// sensitiveNames are the arguments (or map blocks) whose strings never appear in output.
var sensitiveNames = map[string]bool{"secrets": true, "env": true, "mount_flags": true}

// sensitiveName reports whether a name in a spec holds values never shown: one of
// sensitiveNames, and also one written otherwise. A misspelt or re-cased one ("secret",
// "Secrets", "secrest", "MountFlags") is exactly what gets a diagnostic pointing at its line,
// and a name that says it holds a secret ("password", "db_token") is masked wherever it is.
func sensitiveName(name string) bool {
	if name == "" {
		return false
	}
	if sensitiveNames[name] {
		return true
	}
	n := strings.ToLower(nameFolder.Replace(name))
	for _, s := range []string{"secret", "mountflag", "password", "passwd", "token", "credential"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	if n == "env" || n == "environment" {
		return true
	}
	// A near miss is within suggest's edit distance, max(2, len/3), of "secrets" (7 runes),
	// "mountflags" (10) or "environment" (11), and an edit distance is at least the difference
	// in length: only names of 5 to 16 runes can be one. This runs for every name in a spec,
	// once per diagnostic shown.
	if l := utf8.RuneCountInString(n); l < 5 || l > 16 {
		return false
	}
	return suggest(n, []string{"secrets", "mountflags", "environment"}) != ""
}

// nameFolder folds the separators out of a name for sensitiveName.
var nameFolder = strings.NewReplacer("_", "", "-", "")

// redactSource returns a copy of src with sensitive strings masked.
func redactSource(src []byte, json bool) []byte {
	return newSource("", src, json).redacted()
}

// redactTokens is redactSource over the file's tokens, which lex returns (those of the file
// read as native syntax). A file read as JSON is masked by JSON's rules and then by HCL's too:
// one that starts as JSON does (`{`, or a .json file's `[` or number) may hold HCL after that
// (a broken file, or an HCL spec with a brace pasted before it), whose `secrets { k = "v" }`
// JSON's rules do not see, and its error's snippet showed the value
// (TestJSONReadFileHoldingHCLSecretsDoesNotShowThem).
func redactTokens(src []byte, json bool, lex func() hclsyntax.Tokens) []byte {
	out := bytes.Clone(src)
	toks := hclsyntax.Tokens(nil)
	if json {
		redactJSON(out)
		// Lexed with each JSON string's `${` and `%{` made inert: literal text to JSON (a
		// password "pa${ss"), they opened a template to HCL's lexer, whose quote then opened a
		// string never closed, and the rest of the file was masked, a later value's error
		// unreadable (TestJSONSecretHoldingATemplateStartDoesNotMaskTheRestOfTheFile).
		toks, _ = hclsyntax.LexConfig(inertJSONTemplates(src), "", hcl.InitialPos)
	} else {
		toks = lex()
	}
	maskTokens(out, toks, json)
	// A quoted string that runs past its line (`"C:\data\"` escaping its own quote) puts every
	// quote after it out of step: `secrets {` below is string text to the lexer, a password a
	// bare name, and nothing was masked (TestStringEndingInABackslashDoesNotShowTheSecretsBelowIt).
	// Both HCL and JSON refuse such a string, so the file is broken there: what follows its
	// line is lexed again from the next line, and masked by those tokens too, up to
	// maxRelexes times; past that, all that follows is masked, as after a comment never closed.
	for n := 0; ; n++ {
		i := slices.IndexFunc(toks, func(t hclsyntax.Token) bool { return t.Type == hclsyntax.TokenQuotedNewline })
		if i < 0 {
			break
		}
		from := toks[i].Range.End.Byte
		if n == maxRelexes {
			maskRange(out, from, len(out))
			break
		}
		lexed := src
		if json {
			lexed = inertJSONTemplates(src)
		}
		toks, _ = hclsyntax.LexConfig(lexed[from:], "", hcl.Pos{Byte: from, Line: 1, Column: 1})
		maskTokens(out, toks, json)
	}
	return out
}

// maxRelexes bounds how many times redactTokens lexes a file again past a quoted string that
// runs past its line: a file of many such lines is masked whole past that many.
const maxRelexes = 16

// maskTokens masks, in out, the values of sensitive names in toks, a lex of the file out is
// (redactTokens). json says the file is read as JSON.
func maskTokens(out []byte, toks hclsyntax.Tokens, json bool) {
	mask := func(t hclsyntax.Token) { maskRange(out, t.Range.Start.Byte, t.Range.End.Byte) }
	for i := 0; i < len(toks); i++ {
		name, last := sensitiveToken(toks, i)
		if !sensitiveName(name) {
			continue
		}
		j := last + 1
		if j < len(toks) && (toks[j].Type == hclsyntax.TokenEqual || toks[j].Type == hclsyntax.TokenColon) {
			j++
		}
		if j >= len(toks) {
			break
		}
		// Mask every value up to the end of the value: a balanced {...} or [...], or, for a
		// plain value, the rest of the line.
		block := toks[j].Type == hclsyntax.TokenOBrace || toks[j].Type == hclsyntax.TokenOBrack
		depth := 0
		k := j
		for ; k < len(toks); k++ {
			t := toks[k]
			switch t.Type {
			case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen:
				depth++
			case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen:
				depth--
			case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
				// A string, whatever it holds, up to its own closing token: keys stay
				// readable (diagnostics name them anyway); values are masked whole. One
				// never closed holds the rest of the tokens (of the file, or of the part of
				// it lexed: source.redactedTo), its last one too.
				end, closed := closingToken(toks, k)
				to := toks[end].Range.End.Byte
				if closed {
					to = toks[end].Range.Start.Byte
				}
				if !isKey(toks, k, end) && end > k {
					maskRange(out, t.Range.End.Byte, to)
				}
				k = end
				t = toks[k]
			case hclsyntax.TokenSlash:
				// "/*" lexed as '/' and '*' opens a comment never closed (in the file, or in
				// the part of it lexed), whose words are lexed as code: all of it is the
				// value's, to the end.
				if k+1 < len(toks) && toks[k+1].Type == hclsyntax.TokenStar && toks[k+1].Range.Start.Byte == t.Range.End.Byte {
					maskRange(out, t.Range.Start.Byte, len(out))
					k = len(toks)
				}
			case hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit, hclsyntax.TokenNumberLit, hclsyntax.TokenIdent:
				// Outside quotes: a stray literal of a broken file, a number, a bare name.
				if !isKey(toks, k, k) {
					mask(t)
				}
			case hclsyntax.TokenComment:
				// A value written unquoted that starts with # or // (`k = #hunter2`) is a
				// comment to HCL, and the missing value is what the diagnostic points at.
				mask(t)
			}
			// JSON's plain value ends at its comma too (`"secrets": "x", "capacity_min": "bad"`
			// keeps the size its error names readable), unless a string not a key follows it.
			if block && depth <= 0 || !block && depth <= 0 && (endsLine(t) || t.Type == hclsyntax.TokenEOF || json && t.Type == hclsyntax.TokenComma && !strayFollows(out, t.Range.End.Byte)) {
				break
			}
		}
		i = k
	}
}

// hideMasked replaces with Redacted, in each diagnostic's summary and detail, the source text
// under its subject that redactSource masks in the snippet: HCL quotes what it refuses ("%q is
// not a valid template control keyword", "%q is not a valid JSON keyword"), and in a secrets
// map that is a secret's text (`k = "%{hunter2}"`, `"k": hunter2`). The source is masked only
// for a file with a diagnostic that has a subject, and once for the file and its snippets
// (source.redactedTo). A summary quotes the source only as %q does (HCL's `Unexpected "x"
// block`, volctl's `Missing value for "x"`); one with no quote in it is words alone, left as
// written: scrubbed, a masked word of a typo's ("key" of `bad key = "x"` in secrets) garbled
// HCL's "Missing key/value separator" (TestSyntaxErrorInSecretsKeepsHCLsWords).
func hideMasked(diags hcl.Diagnostics, s *source) hcl.Diagnostics {
	src := s.src
	var masked []byte
	var values *strings.Replacer // hides the file's masked values (maskedValues), read once for all diagnostics
	for _, d := range diags {
		if _, own := d.Extra.(ownWords); d.Subject == nil || own {
			continue
		}
		from, to := max(d.Subject.Start.Byte, 0), min(d.Subject.End.Byte, len(src))
		if from >= to {
			continue
		}
		if masked == nil {
			// As far as any of them shows the file, masked once for them all and their snippets.
			need := 0
			for _, d := range diags {
				if d.Subject != nil {
					need = max(need, snippetReach(d))
				}
			}
			masked = s.redactedTo(need)
		}
		runs := maskedRuns(src, masked, from, to)
		if len(runs) > 0 {
			// A secret's value: what the diagnostic says may be computed from masked text
			// outside its subject (a for expression's key, built of a list written before it:
			// "Two different items produced the key \"TOPSECRET\""), which is hidden too, as
			// far as the file is masked, through the snippets' lines: the strings written in
			// quotes, as written and as HCL reads their escapes ("TOP\u0053ECRET", "$${")
			// (TestForExpressionDuplicateKeyDoesNotQuoteASecret,
			// TestForExpressionDuplicateKeyWithAnEscapeDoesNotQuoteASecret). Not the masked
			// words of the expression around them (for, in), which are HCL's own words too.
			if values == nil {
				values = hidingAll(maskedValues(src, masked, min(s.maskedTo, len(src), len(masked))))
			}
		}
		for _, run := range runs {
			if strings.Contains(d.Summary, `"`) {
				d.Summary = hideText(d.Summary, run)
			}
			d.Detail = hideText(d.Detail, run)
		}
		if len(runs) > 0 {
			if strings.Contains(d.Summary, `"`) {
				d.Summary = values.Replace(d.Summary)
			}
			d.Detail = values.Replace(d.Detail)
		}
	}
	return diags
}

// hidingAll is hideText of each of texts in one pass (one replacer for them all, the longest
// first where two start at one place): a file's masked values are many, and its diagnostics
// may be too.
func hidingAll(texts []string) *strings.Replacer {
	var pairs []string
	add := func(from, to string) {
		if from != "" && from != to {
			pairs = append(pairs, from, to)
		}
	}
	slices.SortFunc(texts, func(a, b string) int { return len(b) - len(a) })
	for _, text := range texts {
		switch {
		case strings.TrimSpace(text) == "":
		case len(text) < MinScrubLen:
			add(strconv.Quote(text), strconv.Quote(Redacted))
		default:
			add(text, Redacted)
			if q := strconv.Quote(text); q[1:len(q)-1] != text {
				add(q[1:len(q)-1], Redacted)
			}
		}
	}
	return strings.NewReplacer(pairs...)
}

// maskedRuns are the runs of src[from:to] that masked, src masked, differs in.
func maskedRuns(src, masked []byte, from, to int) []string {
	var runs []string
	eachMaskedRun(src, masked, from, to, func(i, j int) { runs = append(runs, string(src[i:j])) })
	return runs
}

// eachMaskedRun calls f with the bounds of each run of src[from:to] that masked differs in.
func eachMaskedRun(src, masked []byte, from, to int, f func(i, j int)) {
	for i := from; i < to; {
		if masked[i] == src[i] {
			i++
			continue
		}
		j := i
		for j < to && masked[j] != src[j] {
			j++
		}
		f(i, j)
		i = j
	}
}

// maskedValues are the values src[:to] masks (masked): the masked runs that are a quoted
// string's text, a number, or a heredoc's body, not the words of an expression around them
// (for, in, a variable), which HCL's messages use too; each as written and as HCL reads it: a
// quoted string's escapes ("TOP\u0053ECRET", "$${"), each line of a heredoc without its
// indent. Read once a file: per diagnostic, a spec of 2,000 of them took 43 s
// (TestManyDiagnosticsAreHiddenInLinearTime; TestForExpressionKeyFromAHeredocOrNumberIsHidden).
func maskedValues(src, masked []byte, to int) []string {
	var values []string
	eachMaskedRun(src, masked, 0, to, func(i, j int) {
		run := string(src[i:j])
		quoted := i > 0 && src[i-1] == '"'
		if !quoted && !(run[0] >= '0' && run[0] <= '9') && !heredocBody(src, i, j) {
			return
		}
		values = append(values, run)
		// A number as volctl sends it too: 0755 is sent as "493" (nomadNumber), which the
		// "Octal number" warning's own example printed (TestOctalSecretIsHiddenAsItIsSent);
		// and as HCL reads it, its leading zeros dropped, which HCL's own messages quote (a
		// for expression's duplicate key: TestLeadingZeroSecretIsHiddenAsHCLReadsIt).
		if !quoted && run[0] >= '0' && run[0] <= '9' {
			if sent, err := nomadNumber(run); err == nil && sent != run {
				values = append(values, sent)
			}
			if read := strings.TrimLeft(run, "0"); read != run && read != "" && read[0] >= '0' && read[0] <= '9' {
				values = append(values, read)
			}
		}
		if read, ok := hclStringRead(run); quoted && ok && read != run {
			values = append(values, read)
		}
		for _, line := range strings.Split(run, "\n") {
			if line = strings.TrimSpace(line); line != "" && line != run {
				values = append(values, line)
			}
		}
	})
	return values
}

// heredocBody reports whether src[i:j] is (part of) a heredoc's body: it spans lines, or it
// begins its line (blanks before it) below a line that opens a heredoc (<<ID, <<-ID).
func heredocBody(src []byte, i, j int) bool {
	if bytes.IndexByte(src[i:j], '\n') >= 0 {
		return true
	}
	start := bytes.LastIndexByte(src[:i], '\n') + 1
	if len(bytes.TrimLeft(src[start:i], " \t")) > 0 || start == 0 {
		return false
	}
	prev := bytes.LastIndexByte(src[:start-1], '\n') + 1
	return bytes.Contains(src[prev:start], []byte("<<"))
}

// hclStringRead is what HCL reads a quoted string's text written so as: its escapes (\n,
// \u0053, \U0001F600, \", \\) and $${ and %%{ read. ok is false when it holds a template
// sequence (${, %{), whose value the text does not give.
func hclStringRead(written string) (string, bool) {
	if strings.IndexByte(written, 0) >= 0 {
		return "", false // holds what the placeholders below are made of
	}
	lit := escapedTemplates.Replace(written)
	if strings.Contains(lit, "${") || strings.Contains(lit, "%{") {
		return "", false
	}
	read, err := strconv.Unquote(`"` + lit + `"`)
	if err != nil {
		return "", false
	}
	return templatesBack.Replace(read), true
}

// escapedTemplates puts placeholders, of a byte no quoted string holds raw, for HCL's escapes
// of a template's start; templatesBack reads them as HCL does.
var (
	escapedTemplates = strings.NewReplacer("$${", "\x00D", "%%{", "\x00P")
	templatesBack    = strings.NewReplacer("\x00D", "${", "\x00P", "%{")
)

// ownWords marks a diagnostic (its Extra) whose summary and detail are volctl's words alone,
// quoting nothing of the source: hideMasked leaves it as written. Scrubbed with the masked runs
// under it, the code of a secret's value (`for` of a for expression in mount_flags) would
// garble its words ("no [REDACTED] expressions ... be[REDACTED]e") and reveal nothing.
type ownWords struct{}

// hideText replaces s's occurrences of text, as it is and as %q quotes it, with Redacted. A
// text shorter than MinScrubLen is replaced only quoted: "x" would mask every x of the words.
func hideText(s, text string) string {
	if s == "" || strings.TrimSpace(text) == "" {
		return s
	}
	if len(text) < MinScrubLen {
		return strings.ReplaceAll(s, strconv.Quote(text), strconv.Quote(Redacted))
	}
	s = strings.ReplaceAll(s, text, Redacted)
	if q := strconv.Quote(text); q[1:len(q)-1] != text {
		s = strings.ReplaceAll(s, q[1:len(q)-1], Redacted)
	}
	return s
}

// sensitiveToken returns the name that toks[i] starts, if any, and the index of its last
// token: a bare name, or a quoted one (HCL1's "secrets" = {...}) that '=', ':' or '{' follows,
// or a block's labels and then '{' (`"secrets" "hunter2" {`, refused for its label, whose
// label was shown: secrets37).
func sensitiveToken(toks hclsyntax.Tokens, i int) (string, int) {
	switch {
	case toks[i].Type == hclsyntax.TokenIdent:
		return string(toks[i].Bytes), i
	case toks[i].Type == hclsyntax.TokenOQuote && i+3 < len(toks) && toks[i+1].Type == hclsyntax.TokenQuotedLit &&
		toks[i+2].Type == hclsyntax.TokenCQuote:
		switch toks[i+3].Type {
		case hclsyntax.TokenEqual, hclsyntax.TokenColon, hclsyntax.TokenOBrace:
			return unescape(string(toks[i+1].Bytes)), i + 2
		}
		// Labels: a bare name or a plain quoted one each, a few at most (a spec's blocks take
		// one; the bound keeps a line of many quoted strings linear).
		k := i + 3
		for n := 0; n < maxLabels && k < len(toks); n++ {
			if toks[k].Type == hclsyntax.TokenIdent {
				k++
			} else if k+2 < len(toks) && toks[k].Type == hclsyntax.TokenOQuote && toks[k+1].Type == hclsyntax.TokenQuotedLit &&
				toks[k+2].Type == hclsyntax.TokenCQuote {
				k += 3
			} else {
				break
			}
		}
		if k > i+3 && k < len(toks) && toks[k].Type == hclsyntax.TokenOBrace {
			return unescape(string(toks[i+1].Bytes)), i + 2
		}
	}
	return "", i
}

// maxLabels is how many labels sensitiveToken looks past for a quoted block name's '{'.
const maxLabels = 4

// unescape returns a quoted name's text with its escapes (\u0065) read, as the parser reads
// them; a name it cannot read is returned as written.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
		return u
	}
	return s
}

// closingToken returns the index of the token that closes the string or heredoc opened at
// toks[open], past any template sequences and strings nested in them, and true; or, if it is
// never closed, the last token before the end of the file, and false.
func closingToken(toks hclsyntax.Tokens, open int) (int, bool) {
	depth := 0
	for k := open; k < len(toks); k++ {
		switch toks[k].Type {
		case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			depth--
			if depth == 0 {
				return k, true
			}
		case hclsyntax.TokenEOF:
			return max(k-1, open), false
		}
	}
	return len(toks) - 1, false
}

// isKey reports whether the value spanning toks[from..to] is a map key: it follows an opening
// brace, a comma or a line break, and '=' or ':' follows it.
func isKey(toks hclsyntax.Tokens, from, to int) bool {
	if from < 1 || to+1 >= len(toks) {
		return false
	}
	next, prev := toks[to+1].Type, toks[from-1]
	return (next == hclsyntax.TokenEqual || next == hclsyntax.TokenColon) &&
		(prev.Type == hclsyntax.TokenOBrace || prev.Type == hclsyntax.TokenComma || endsLine(prev))
}

// maskRange masks out[from:to] but its line breaks.
func maskRange(out []byte, from, to int) {
	for i := from; i < to && i < len(out); i++ {
		if out[i] != '\n' {
			out[i] = '*'
		}
	}
}

// jsonSensitiveKey finds the sensitive keys of JSON source; compiled on first use.
var jsonSensitiveKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"((?:[^"\\\n]|\\.)*)"\s*:\s*`)
})

// redactJSON masks, in place, everything but the structure (braces, brackets, commas,
// colons, white space) and the object keys of the values of sensitive keys in JSON source:
// strings, numbers, and the bare words and stray characters of a broken file (`"k": hunter2`,
// which HCL's JSON parser quotes back as an invalid keyword), since the parser takes a number
// where a string is due and a mistyped secret is what gets a diagnostic. A plain value ends at
// the comma, bracket or line break after it, or at the next key.
func redactJSON(b []byte) {
	for _, loc := range jsonSensitiveKey().FindAllSubmatchIndex(b, -1) {
		if !sensitiveName(unescape(string(b[loc[2]:loc[3]]))) {
			continue
		}
		i := loc[1]
		depth := 0
	value:
		for i < len(b) {
			c := b[i]
			switch {
			case c == '"' && jsonKeyAt(b, i):
				if depth == 0 {
					break value // the next key of the object around: the value was missing
				}
				i = skipJSONString(b, i)
				continue
			case c == '"':
				i = maskJSONString(b, i)
				continue
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth <= 0 {
					break value // the value's own close, or the object's around a plain value
				}
			case c == '\n':
				if depth == 0 {
					break value
				}
			case c == ',':
				// A plain value ends at its comma, unless what follows is no key: a list
				// whose brackets were forgotten (`"mount_flags": "rw", "password=x"`).
				if depth == 0 {
					j, stray := strayAfterComma(b, i+1)
					if !stray {
						break value
					}
					i = j // the stray string, on this line or the next
					continue
				}
			case c == ':' || c == ' ' || c == '\t' || c == '\r':
			default:
				b[i] = '*' // a number, a bare word, a stray character
			}
			i++
		}
	}
}

// inertJSONTemplates is JSON source b with the `{` of each `${` and `%{` inside a string (by
// JSON's rules: up to its unescaped closing quote, or its line's end) replaced by '_', so that
// HCL's lexer reads the string as one literal; every byte stays where it was.
func inertJSONTemplates(b []byte) []byte {
	out := bytes.Clone(b)
	in := false
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '\n':
			in = false
		case !in:
			in = c == '"'
		case c == '\\':
			i++
		case c == '"':
			in = false
		case (c == '$' || c == '%') && i+1 < len(out) && out[i+1] == '{':
			out[i+1] = '_'
		}
	}
	return out
}

// strayAfterComma says whether JSON source b, past a comma at i, goes on with a string that is
// not an object key (a value of the list a comma before it was in, its brackets forgotten), and
// where that string starts.
func strayAfterComma(b []byte, i int) (int, bool) {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i, i < len(b) && b[i] == '"' && !jsonKeyAt(b, i)
}

// strayFollows is strayAfterComma's answer alone.
func strayFollows(b []byte, i int) bool {
	_, stray := strayAfterComma(b, i)
	return stray
}

// maskJSONString masks the contents of the string starting at the quote at i and returns the
// index after its closing quote.
func maskJSONString(b []byte, i int) int {
	i++
	for i < len(b) && b[i] != '"' && b[i] != '\n' {
		if b[i] == '\\' && i+1 < len(b) {
			b[i] = '*'
			i++
		}
		b[i] = '*'
		i++
	}
	return i + 1
}

// skipJSONString returns the index after the string starting at the quote at i.
func skipJSONString(b []byte, i int) int {
	i++
	for i < len(b) && b[i] != '"' && b[i] != '\n' {
		if b[i] == '\\' {
			i++
		}
		i++
	}
	return i + 1
}

// jsonKeyAt reports whether the string starting at i is an object key (followed by ':').
func jsonKeyAt(b []byte, i int) bool {
	j := skipJSONString(b, i)
	for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n') {
		j++
	}
	return j < len(b) && b[j] == ':'
}
