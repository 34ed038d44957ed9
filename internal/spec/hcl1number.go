package spec

import (
	"bytes"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Numbers HCL1 reads and HCL2 does not. Nomad's scanner (hcl/scanner, scanNumber) reads a
// number as one word: `0x1F` (hexadecimal, any case, after an optional -), `1.` and `.5`
// (floats with no digits on one side of the point), besides what HCL2 reads too. HCL2 lexes
// each of those as a number and more tokens (`0` `x1F`, `1` `.`, `.` `5`), so the file fails
// to parse and comes to the rewrite, which puts the number in HCL2's form (31, 1.0, 0.5) and
// records the text as written (offsetMap.lits): parameters, secrets and context get what
// Nomad's weak decoding makes of it (0x1F -> "31", .5 -> "0.5"), mount_options the text as
// written ("0x1F"), as Nomad sends them (TestNumbersAsHCL1ReadsThem).
//
// What HCL1 does not read as one number, Nomad refuses: `1_000` (no digit separators: a
// number, then a key `_000` its parser rejects), `0b101`, `0o17`, `0x` with no digits, `1e`
// with no exponent. The rewrite reports each with the value, where it is and what to write
// (TestNumbersHCL1RefusesAreRefused), rather than the parse error its tokens would make
// ("Missing newline after argument"). A value in a secrets map, env or mount_flags is not
// quoted (the snippet, masked, shows where it is).

// numberLit is a number literal the rewrite changed: its length in the rewritten source and
// its text as written.
type numberLit struct {
	n    int
	text string
}

var (
	hcl1Hex   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^0[xX][0-9a-fA-F]+$`) })
	hcl1Float = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	})
)

// number looks at the token at i for a number written as one word that HCL2 splits, in a
// value. It rewrites the word (or, when HCL1 refuses it too, reports it and writes 0 in its
// place) and returns the index of the word's last token; i when there is none.
func (r *rewriter) number(i int) int {
	if r.counting || !r.inValue() {
		return i
	}
	toks := r.toks
	t := toks[i]
	adjacent := func(a, b int) bool {
		return a >= 0 && b < len(toks) && toks[a].Range.End.Byte == toks[b].Range.Start.Byte
	}
	switch t.Type {
	case hclsyntax.TokenNumberLit:
		if adjacent(i-1, i) && toks[i-1].Type == hclsyntax.TokenDot {
			return i // the index of a traversal (a.0) or a word that starts with the dot
		}
	case hclsyntax.TokenDot:
		if !adjacent(i, i+1) || toks[i+1].Type != hclsyntax.TokenNumberLit {
			return i
		}
		if adjacent(i-1, i) {
			switch toks[i-1].Type {
			case hclsyntax.TokenIdent, hclsyntax.TokenNumberLit, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote:
				return i // a traversal: a.5, x[0].5
			}
		}
	default:
		return i
	}
	j := i
	for adjacent(j, j+1) {
		switch n := toks[j+1]; n.Type {
		case hclsyntax.TokenIdent, hclsyntax.TokenNumberLit, hclsyntax.TokenDot:
			j++
			continue
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus:
			// An exponent's sign after a word HCL2 split: 1.e+3.
			if e := toks[j].Bytes; len(e) > 0 && (e[len(e)-1] == 'e' || e[len(e)-1] == 'E') &&
				adjacent(j+1, j+2) && toks[j+2].Type == hclsyntax.TokenNumberLit {
				j += 2
				continue
			}
		}
		break
	}
	if j == i {
		return i // a number HCL2 reads as HCL1 does
	}
	start, end := t.Range.Start.Byte, toks[j].Range.End.Byte
	from := t.Range.Start
	if t.Type == hclsyntax.TokenDot && adjacent(i-1, i) && toks[i-1].Type == hclsyntax.TokenMinus {
		// HCL1 reads a - as a number's sign only before a digit: -.5 is refused.
		start, from = toks[i-1].Range.Start.Byte, toks[i-1].Range.Start
		word := string(r.src[start:end])
		r.refuseNumber(word, hcl.Range{Filename: t.Range.Filename, Start: from, End: toks[j].Range.End})
		r.edits = append(r.edits, edit{off: start, del: end - start, ins: "0"})
		return j
	}
	word := string(r.src[start:end])
	var hcl2 string
	switch {
	case hcl1Hex().MatchString(word):
		n, _ := new(big.Int).SetString(word[2:], 16)
		hcl2 = n.String()
	case hcl1Float().MatchString(word):
		mant, exp, _ := strings.Cut(strings.ReplaceAll(word, "E", "e"), "e")
		if strings.HasPrefix(mant, ".") {
			mant = "0" + mant
		}
		if strings.HasSuffix(mant, ".") {
			mant += "0"
		}
		hcl2 = mant
		if exp != "" {
			hcl2 += "e" + exp
		}
	default:
		r.refuseNumber(word, hcl.Range{Filename: t.Range.Filename, Start: t.Range.Start, End: toks[j].Range.End})
		r.edits = append(r.edits, edit{off: start, del: end - start, ins: "0"})
		return j
	}
	r.edits = append(r.edits, edit{off: start, del: end - start, ins: hcl2, lit: true})
	return j
}

// inValue reports whether the rewriter is in an attribute's value or an expression, outside
// any string or template.
func (r *rewriter) inValue() bool {
	for _, f := range r.stack {
		if f.kind == frameTemplate {
			return false
		}
	}
	f := r.top()
	return f.kind == frameExpr || f.state == stateExpr
}

// refuseNumber reports a word HCL1 does not read as a number, saying what to write instead.
func (r *rewriter) refuseNumber(word string, rng hcl.Range) {
	shown := fmt.Sprintf("%q", word)
	as := func(s string) string { return " (" + s + ")" } // what to write, from the value
	if masked := r.source.redacted(); !bytes.Equal(masked[rng.Start.Byte:rng.End.Byte], r.src[rng.Start.Byte:rng.End.Byte]) {
		shown = "this value" // a secret's, maybe: neither it nor what it would become
		as = func(string) string { return "" }
	}
	lower := strings.ToLower(word)
	var why string
	switch {
	case strings.Contains(word, "_"):
		why = fmt.Sprintf("Nomad reads specs with HCL1, which has no digit separators: %s is refused there. Write the number without them%s, or put it in quotes to send the text as written.",
			shown, as(strings.ReplaceAll(word, "_", "")))
	case strings.HasPrefix(lower, "0x"):
		why = fmt.Sprintf("Nomad reads a number starting 0x as hexadecimal, which needs hexadecimal digits (0-9, a-f) after the 0x and nothing else: %s is refused there. Write it as 0x1F or in decimal, or put it in quotes to send the text as written.", shown)
	case strings.HasPrefix(lower, "0b"), strings.HasPrefix(lower, "0o"):
		why = fmt.Sprintf("Nomad reads specs with HCL1, which has no binary (0b) or 0o octal numbers: %s is refused there. Write it in decimal or hexadecimal (0x...), or put it in quotes to send the text as written.", shown)
	case strings.HasPrefix(word, "-."):
		why = fmt.Sprintf("Nomad reads a - as a number's sign only before a digit: %s is refused there. Write it with a 0 before the point%s, or put it in quotes to send the text as written.", shown, as("-0"+word[1:]))
	case strings.ContainsAny(word, "eE") && strings.IndexFunc(word, func(c rune) bool { return c != '.' && (c < '0' || c > '9') && c != 'e' && c != 'E' }) < 0:
		why = fmt.Sprintf("An exponent needs digits after its e (1e3, 1.5e-3): %s is refused by Nomad. Write the exponent's digits, or put it in quotes to send the text as written.", shown)
	default:
		why = fmt.Sprintf("Nomad reads %s as no number (HCL1 reads decimal numbers, and hexadecimal ones written 0x...). Write a number, or put it in quotes to send the text as written.", shown)
	}
	r.diags = append(r.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid number", Detail: why, Subject: rng.Ptr()})
}

// spacedSign returns the first - in expr that stands apart from the number it signs (`- 5`,
// `-/* */5`): HCL2 reads it as an expression on the number, HCL1's scanner reads it as a
// number's sign only directly before a digit, and otherwise as a token its parser refuses.
func spacedSign(expr hcl.Expression) (hcl.Range, bool) {
	return firstIn(expr, func(n hclsyntax.Node) (hcl.Range, bool) {
		if u, ok := n.(*hclsyntax.UnaryOpExpr); ok && u.Op == hclsyntax.OpNegate {
			if lit, ok := u.Val.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.Number &&
				u.SymbolRange.End.Byte != lit.SrcRange.Start.Byte {
				return u.SymbolRange, true
			}
		}
		return hcl.Range{}, false
	})
}
