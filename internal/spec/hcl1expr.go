package spec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apparentlymart/go-textseg/v15/textseg"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// HCL1, which Nomad reads volume specs with, has values only: numbers, strings, heredocs,
// bools, lists and objects, written `key = value`. HCL2 evaluates expressions on them
// (`2*1024`, `true ? "a" : "b"`, `[for s in x : s]`, `["a"][0]`, `(5)`, `!true`) and takes
// `key: value` in an object, so volctl would read a value from a file `nomad volume register`
// refuses ("illegal char", "expected: IDENT | STRING | ASSIGN | LBRACE"). In a volume spec
// hcl1Syntax finds the first such thing in a value and decoder.eval refuses it, saying what to
// write instead (TestVolumeSpecValuesAreHCL1Values). Variables, function calls and template
// sequences have diagnostics of their own (eval), and a sign apart from its number its own
// (spacedSign).

// hcl1Syntax returns the first part of expr HCL1 has no syntax for, and why, in words for
// a diagnostic's detail. src is what expr's ranges index.
func hcl1Syntax(expr hcl.Expression, src []byte) (hcl.Range, string, bool) {
	var what string
	rng, ok := firstIn(expr, func(n hclsyntax.Node) (hcl.Range, bool) {
		switch e := n.(type) {
		case *hclsyntax.BinaryOpExpr:
			what = "operators"
			if op, ok := between(src, e.LHS.Range(), e.RHS.Range()); ok {
				what = fmt.Sprintf("operators (here %s)", op)
			}
			return e.SrcRange, true
		case *hclsyntax.UnaryOpExpr:
			if lit, ok := e.Val.(*hclsyntax.LiteralValueExpr); ok && e.Op == hclsyntax.OpNegate && lit.Val.Type() == cty.Number {
				return hcl.Range{}, false // a signed number; spacedSign refuses - 5
			}
			what = "operators (here !)"
			if e.Op == hclsyntax.OpNegate {
				what = "operators (here - on a value that is not a number)"
			}
			return e.SrcRange, true
		case *hclsyntax.ConditionalExpr:
			what = "conditionals (a ? b : c)"
			return e.SrcRange, true
		case *hclsyntax.ForExpr:
			what = "for expressions"
			return e.SrcRange, true
		case *hclsyntax.IndexExpr, *hclsyntax.SplatExpr, *hclsyntax.RelativeTraversalExpr:
			what = "indexes and splats ([0], [*], .name after a value)"
			return n.Range(), true
		case *hclsyntax.ParenthesesExpr:
			what = "parentheses"
			return e.SrcRange, true

		case *hclsyntax.ObjectConsExpr:
			for _, item := range e.Items {
				if hcl1BadKey(item.KeyExpr) {
					what = "keys that are numbers or bools (HCL1 takes a name or a quoted string)"
					return item.KeyExpr.Range(), true
				}
				if colon, ok := colonBetween(src, item.KeyExpr.Range(), item.ValueExpr.Range()); ok {
					what = `":" between a key and its value (HCL1 takes "=" only)`
					return colon, true
				}
			}
		}
		return hcl.Range{}, false
	})
	return rng, what, ok
}

// hcl1BadKey reports whether an object key is a number or a bool, which HCL1 lexes as such
// and refuses as a key ("expected: IDENT | STRING ... got: NUMBER"): `1 = "x"`, `true = "x"`.
func hcl1BadKey(key hclsyntax.Expression) bool {
	if k, ok := key.(*hclsyntax.ObjectConsKeyExpr); ok {
		key = k.Wrapped
	}
	switch k := key.(type) {
	case *hclsyntax.LiteralValueExpr:
		return k.Val.Type() == cty.Number || k.Val.Type() == cty.Bool
	case *hclsyntax.ScopeTraversalExpr:
		return len(k.Traversal) == 1 && (k.Traversal.RootName() == "true" || k.Traversal.RootName() == "false")
	}
	return false
}

// between returns the source between two ranges, trimmed: a binary operator's symbol.
func between(src []byte, a, b hcl.Range) (string, bool) {
	if src == nil || a.End.Byte > b.Start.Byte || b.Start.Byte > len(src) {
		return "", false
	}
	toks, _ := hclsyntax.LexExpression(src[a.End.Byte:b.Start.Byte], "", hcl.InitialPos)
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenNewline, hclsyntax.TokenEOF:
		default:
			return string(t.Bytes), true
		}
	}
	return "", false
}

// colonBetween returns where a ":" stands between an object item's key and value.
func colonBetween(src []byte, key, value hcl.Range) (hcl.Range, bool) {
	if src == nil || key.End.Byte > value.Start.Byte || value.Start.Byte > len(src) {
		return hcl.Range{}, false
	}
	toks, _ := hclsyntax.LexExpression(src[key.End.Byte:value.Start.Byte], key.Filename, key.End)
	for _, t := range toks {
		if t.Type == hclsyntax.TokenColon {
			return t.Range, true
		}
	}
	return hcl.Range{}, false
}

// notHCL1 is the error for the first part of expr HCL1 has no syntax for, or nil. An
// expression with a template sequence gets eval's diagnostic instead, which says how to write
// the text literally.
func (d *decoder) notHCL1(expr hcl.Expression) *hcl.Diagnostic {
	if _, tmpl := templateIn(expr); tmpl {
		return nil
	}
	rng, what, ok := hcl1Syntax(expr, d.src)
	if !ok {
		return nil
	}
	return hcl1SyntaxError(rng, what)
}

// hcl1SyntaxError is the error for what HCL1 has no syntax for (what: its kind, in words).
func hcl1SyntaxError(rng hcl.Range, what string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a value Nomad reads", Subject: rng.Ptr(), Extra: ownWords{},
		Detail: "Nomad reads volume specs with HCL1, which has values only, and no " + what + ": `nomad volume register` and `create` refuse this file before they send it. " +
			"Write the value itself: a number, a quoted string, a list or a map of them, with = between a key and its value."}
}

// escapedTemplate warns of a "$${" or "%%{" in a string or heredoc of a volume spec: HCL2,
// and so volctl, reads it as "${" or "%{" (the escape docs/specs.md gives for passing template
// text to a plugin), but HCL1 has no such escape, and Nomad sends the text as written, both
// characters and all. The file is read otherwise by `nomad volume register`; `volctl export
// nomad` writes the value volctl read in a form both read alike (TestEscapedTemplateIsWarnedOf).
func (d *decoder) escapedTemplate(expr hcl.Expression) *hcl.Diagnostic {
	rng := expr.Range()
	if d.src == nil || rng.End.Byte > len(d.src) || rng.Start.Byte >= rng.End.Byte {
		return nil
	}
	text := d.src[rng.Start.Byte:rng.End.Byte]
	if !bytes.Contains(text, []byte("$${")) && !bytes.Contains(text, []byte("%%{")) {
		return nil
	}
	toks, _ := hclsyntax.LexExpression(text, rng.Filename, rng.Start)
	var quoted []byte // the quoted string's text so far, as written: the lexer cuts it at "$${"
	opened := 0       // where that string's opening quote stands in d.src
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOQuote:
			quoted, opened = quoted[:0], t.Range.Start.Byte
		case hclsyntax.TokenQuotedLit:
			quoted = append(quoted, t.Bytes...)
		}
		if t.Type == hclsyntax.TokenCQuote && unclosedInterp(quoted) {
			// HCL1's scanner reads a quoted string's "${" up to the "}" that closes it, quotes
			// and all, so a "$${" with no "}" after it in the string does not end there: Nomad
			// reads on to the next "}" in the file, or refuses the file, where volctl warned that
			// it sent the text as written (TestUnclosedDollarEscapeNomadCannotParseIsRefused,
			// TestUnclosedDollarEscapeErrorDoesNotClaimARefusalNomadDoesNotMake).
			// What Nomad makes of it: the string closes at the first quote after the next "}".
			nomad := "refuses the file (\"literal not terminated\")"
			if i := bytes.IndexByte(d.src[opened+1:], '}'); i >= 0 && bytes.IndexByte(d.src[opened+1+i:], '"') >= 0 {
				nomad = "reads on, past its quote, to the next \"}\" in the file and the quote after it: another value here, and the arguments between not at all"
			}
			return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a value Nomad reads", Subject: rng.Ptr(), Extra: ownWords{},
				Detail: "Nomad's HCL1 reader reads a \"${\" in a quoted string (the \"${\" in \"$${\" too) up to the \"}\" that closes it, quotes and line ends and all, and finds none before this string's end: " +
					"`nomad volume register` " + nomad + ". Write \"$\\u007b\" for \"${\", which both read alike."}
		}
	}
	for _, t := range toks {
		if t.Type != hclsyntax.TokenQuotedLit && t.Type != hclsyntax.TokenStringLit {
			continue
		}
		for _, esc := range []string{"$${", "%%{"} {
			if bytes.Contains(t.Bytes, []byte(esc)) {
				// At the whole value: where the escape stands in a secret is the secret's.
				return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Read otherwise by Nomad", Subject: rng.Ptr(),
					Detail: fmt.Sprintf("volctl reads %s in a string as %s, but Nomad's HCL1 reader has no such escape and sends it as written, %s and all: "+
						"`nomad volume register` would send the plugin other text than volctl sends for this file. `volctl export nomad` writes the value volctl reads in a form Nomad reads alike.",
						esc, esc[1:], esc)}
			}
		}
	}
	return nil
}

// heredoc is v, the value of expr, as Nomad's HCL1 reader makes it when expr is a heredoc
// (or a list holding heredocs: heredocsIn), or an error where that reader refuses it. HCL1 and HCL2 part on heredocs (checked with Nomad
// v2.0.6-dev, TestHeredocsAsNomadReadsThem):
//   - HCL1 ends a heredoc only at a line holding its marker, blanks before it, CRs after it,
//     and a newline: "EOF " or a marker on the file's last line without a newline is "heredoc
//     not terminated" there.
//   - <<- strips from each line the blanks before the closing marker, when every line starts
//     with them, and nothing otherwise; HCL2 strips the least indentation of the lines.
//   - << keeps the blanks before an indented closing marker as the value's last characters.
//   - A line's CR before its LF is dropped.
//
// "$${" and "%%{" are read as "${" and "%{", as volctl reads them everywhere (escapedTemplate
// warns of them).
func (d *decoder) heredoc(expr hcl.Expression, v cty.Value) (cty.Value, hcl.Diagnostics) {
	if list, ok := expr.(*hclsyntax.TupleConsExpr); ok {
		return d.heredocsIn(list, v)
	}
	rng := expr.Range()
	if d.src == nil || rng.Start.Byte+2 > len(d.src) || string(d.src[rng.Start.Byte:rng.Start.Byte+2]) != "<<" ||
		v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return v, nil
	}
	text := d.src[rng.Start.Byte:]
	nl := bytes.IndexByte(text, '\n')
	if nl < 0 {
		return v, nil
	}
	opener := strings.TrimRight(string(text[2:nl]), "\r")
	indent := strings.HasPrefix(opener, "-")
	anchor := strings.TrimPrefix(opener, "-")
	var lines []string
	at := rng.Start.Byte + nl + 1
	for rest := text[nl+1:]; ; {
		line, more, found := bytes.Cut(rest, []byte("\n"))
		l := strings.TrimRight(string(line), "\r")
		if strings.TrimSpace(l) == anchor {
			// The line HCL2 closes the heredoc at: HCL1 must close it there too.
			blanks := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			if l != blanks+anchor || !found {
				end := hcl.Pos{Line: rng.Start.Line + 1 + len(lines), Column: 1, Byte: at}
				return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Heredoc Nomad does not end",
					Subject: &hcl.Range{Filename: rng.Filename, Start: end, End: end},
					Detail:  fmt.Sprintf("Nomad's HCL1 reader ends a heredoc only at a line holding its marker (%s) with nothing after it, ended by a newline, and refuses this file (\"heredoc not terminated\"). Remove what follows %s on its line, and end the line.", anchor, anchor)}}
			}
			out := strings.Join(lines, "\n")
			if len(lines) > 0 {
				out += "\n"
			}
			if indent {
				all := true
				for _, l := range lines {
					all = all && strings.HasPrefix(l, blanks)
				}
				if all && len(lines) > 0 {
					for i, l := range lines {
						lines[i] = strings.TrimPrefix(l, blanks)
					}
					out = strings.Join(lines, "\n") + "\n"
				}
			} else {
				out += blanks
			}
			out = strings.NewReplacer("$${", "${", "%%{", "%{").Replace(out)
			return cty.StringVal(out), nil
		}
		if !found {
			return v, nil // not a heredoc HCL2 read: leave it to HCL2's value
		}
		lines = append(lines, l)
		at += len(line) + 1
		rest = more
	}
}

// heredocsIn is heredoc for a list (mount_flags = [<<-EOT ...]): v, its value, with each item
// that is a heredoc as HCL1 makes it (TestHeredocsAsNomadReadsThem: heredoc-indent-in-list).
func (d *decoder) heredocsIn(list *hclsyntax.TupleConsExpr, v cty.Value) (cty.Value, hcl.Diagnostics) {
	if v.IsNull() || !v.IsKnown() || !v.Type().IsTupleType() || v.LengthInt() != len(list.Exprs) || len(list.Exprs) == 0 {
		return v, nil
	}
	items := v.AsValueSlice()
	var diags hcl.Diagnostics
	for i, item := range list.Exprs {
		var idiags hcl.Diagnostics
		items[i], idiags = d.heredoc(item, items[i])
		diags = append(diags, idiags...)
	}
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return cty.TupleVal(items), diags
}

// HCL1Name reports whether HCL1's scanner, which Nomad reads volume specs with, reads name
// as one name: a letter or "_" first (unicode.IsLetter), then letters, digits (unicode.IsDigit),
// "_", "-" and ".". HCL2 takes more in a name (Unicode's identifier characters: combining
// marks such as the vowel signs of नाम, U+00B7 MIDDLE DOT, connector punctuation, letter
// numbers such as Ⅻ); at those HCL1 stops with "illegal char". Otherwise it returns the first
// rune HCL1 does not take there.
func HCL1Name(name string) (rune, bool) {
	for i, r := range name {
		if hcl1Letter(r) || i > 0 && (hcl1Digit(r) || r == '-' || r == '.') {
			continue
		}
		return r, false
	}
	return 0, name != ""
}

func hcl1Letter(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r >= 0x80 && unicode.IsLetter(r)
}

func hcl1Digit(r rune) bool {
	return r >= '0' && r <= '9' || r >= 0x80 && unicode.IsDigit(r)
}

// heredocMarker is the error for the first heredoc in expr whose marker Nomad's HCL1 reader
// does not take, or nil. HCL1's scanner takes letters, digits and "_" in a marker (`<<EOT`,
// `<<-EOT`) and refuses the file at any other ("invalid characters in heredoc anchor"), where
// HCL2 takes a name's characters: `<<END-X` (ASCII), `<<नाम` (a combining mark), `<<A·B`.
// d.src is the text expr was parsed from.
func (d *decoder) heredocMarker(expr hcl.Expression) *hcl.Diagnostic {
	node, ok := expr.(hclsyntax.Node)
	if !ok || d.src == nil {
		return nil
	}
	var diag *hcl.Diagnostic
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		// A heredoc is a template starting at its <<; a quoted string's, at its quote, holds
		// literal parts that may start with << ("<<EOF\nx").
		tmpl, ok := n.(*hclsyntax.TemplateExpr)
		if !ok || diag != nil {
			return nil
		}
		rng := tmpl.Range()
		if rng.Start.Byte+2 > len(d.src) || string(d.src[rng.Start.Byte:rng.Start.Byte+2]) != "<<" {
			return nil
		}
		opener := d.src[rng.Start.Byte+2:]
		opener, _, _ = bytes.Cut(opener, []byte("\n"))
		opener = bytes.TrimRight(opener, "\r")
		skip := 2
		if len(opener) > 0 && opener[0] == '-' {
			opener, skip = opener[1:], 3
		}
		marker := string(opener)
		bad := strings.IndexFunc(marker, func(r rune) bool { return !hcl1Letter(r) && !hcl1Digit(r) })
		if bad < 0 {
			return nil
		}
		r, _ := utf8.DecodeRuneInString(marker[bad:])
		fixed := strings.Map(func(r rune) rune {
			if hcl1Letter(r) || hcl1Digit(r) {
				return r
			}
			return '_'
		}, marker)
		start := hcl.Pos{Line: rng.Start.Line, Column: rng.Start.Column + skip, Byte: rng.Start.Byte + skip}
		end := hcl.Pos{Line: start.Line, Column: start.Column + Graphemes(marker), Byte: start.Byte + len(marker)}
		diag = &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Heredoc marker Nomad does not read", Extra: ownWords{},
			Subject: &hcl.Range{Filename: rng.Filename, Start: start, End: end},
			Detail: fmt.Sprintf("The heredoc marker %q holds %U: Nomad's HCL1 reader takes letters, digits and \"_\" only in a heredoc marker, "+
				"and `nomad volume register` refuses this file (\"invalid characters in heredoc anchor\" or \"illegal char\"). "+
				"Write a marker of those alone, on the line opening the heredoc and on the line closing it: %s.", marker, r, fixed),
		}
		return nil
	})
	return diag
}

// Graphemes is the width of s in grapheme clusters: the columns HCL counts in a position, and
// the ones the export's alignment counts (internal/nomad).
func Graphemes(s string) int {
	n := 0
	for rest := []byte(s); len(rest) > 0; n++ {
		adv, _, err := textseg.ScanGraphemeClusters(rest, true)
		if err != nil || adv == 0 {
			break
		}
		rest = rest[adv:]
	}
	return n
}

// hcl1Names is the error for each name in a volume spec (an argument's, a block's, a map
// key written bare) that HCL1 does not read as one (HCL1Name): volctl, reading it as HCL2,
// took `parameters { नाम = "x" }`, which `nomad volume register` refuses ("illegal char"), so
// the spec broke at its handover. A name inside a template sequence is left to the sequence's
// own error. s is the file as written (its tokens, in its positions), never JSON. A file of
// ASCII alone, most, is not lexed for it: the names HCL2 reads in ASCII HCL1 reads too.
//
// A name that already has an error at it (others, in the file's positions) gets no other: it
// is an argument or block a volume spec does not take, or a variable, which quoting does not
// mend ("Quote it" to a top-level `नाम = "x"` besides "Unsupported argument" was wrong advice),
// so the error, and its "Quote it", is a map key's alone (TestHCL1NameAdviceIsAMapKeys).
func hcl1Names(s *source, others hcl.Diagnostics) hcl.Diagnostics {
	if isASCII(s.src) {
		return nil
	}
	refused := map[hcl.Pos]bool{}
	for _, d := range others {
		if d.Severity == hcl.DiagError && d.Subject != nil {
			refused[hcl.Pos{Line: d.Subject.Start.Line, Column: d.Subject.Start.Column}] = true
		}
	}
	var diags hcl.Diagnostics
	depth := 0 // inside ${...} or %{...}
	for _, t := range s.tokens() {
		switch t.Type {
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
		case hclsyntax.TokenTemplateSeqEnd:
			depth = max(depth-1, 0)
		case hclsyntax.TokenIdent:
			if depth > 0 {
				continue
			}
			name := string(t.Bytes)
			r, ok := HCL1Name(name)
			if ok || refused[hcl.Pos{Line: t.Range.Start.Line, Column: t.Range.Start.Column}] {
				continue
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Name Nomad does not read", Subject: t.Range.Ptr(), Extra: ownWords{},
				Detail: fmt.Sprintf("The name %q holds %U, which Nomad's HCL1 reader does not take in a name unquoted (it takes letters, digits, \"_\", \"-\" and \".\", a letter or \"_\" first): "+
					"`nomad volume register` refuses this file (\"illegal char\"). Quote it: %s.", name, r, strconv.Quote(name)),
			})
		}
	}
	return diags
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// unclosedInterp reports whether a quoted string's text, as written, holds a "${" that no "}"
// closes before its end, counting the braces between as HCL1's scanner counts them.
func unclosedInterp(text []byte) bool {
	for i := 0; i+1 < len(text); i++ {
		if text[i] != '$' || text[i+1] != '{' {
			continue
		}
		depth := 0
		j := i + 1
		for ; j < len(text); j++ {
			switch text[j] {
			case '{':
				depth++
			case '}':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if depth > 0 {
			return true
		}
		i = j
	}
	return false
}
