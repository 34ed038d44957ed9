package spec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// missingValue rewrites the parsers' errors for an argument written with its equals sign (or
// colon) and no value after it, `plugin_id =` at the end of a line: HCL said "Invalid
// expression: Expected the start of an expression, but found an invalid expression token" at
// the line's end, where no caret shows, JSON "Missing JSON value", and neither named the
// argument nor said that its value was missing (TestAnArgumentWithoutItsValueIsNamed). The
// error is placed on the argument's name and equals sign, names the argument and what stands
// where its value should (the end of the line or file, a comment, a closing brace), and says
// what to write. Only the parsers' own errors are touched, and only when the token before the
// place they name is the equals sign (or colon) of a name.
func missingValue(diags hcl.Diagnostics, s *source) hcl.Diagnostics {
	var m *offsetMap
	for _, d := range diags {
		if _, own := d.Extra.(ownWords); own || d.Severity != hcl.DiagError || d.Subject == nil {
			continue
		}
		var a unvalued
		var ok bool
		switch {
		case s.json && (d.Summary == "Missing JSON value" || d.Summary == "Invalid start of value" || d.Summary == "Missing value"):
			a, ok = jsonKeyBefore(s.src, d.Subject.Start.Byte)
		case !s.json && (d.Summary == "Invalid expression" || d.Summary == "Missing expression"):
			a, ok = hclNameBefore(s.tokens(), d.Subject.Start.Byte)
		}
		if !ok {
			continue
		}
		if m == nil {
			m = &offsetMap{src: s.src, lineStarts: lineStarts(s.src)}
		}
		rng := hcl.Range{Filename: s.filename, Start: m.pos(a.from), End: m.pos(a.to)}
		d.Summary = fmt.Sprintf("Missing value for %q", shown(a.name))
		if s.json {
			d.Detail = fmt.Sprintf("%q has a colon and then %s, where its value must start: give it one, such as a string in quotes, "+
				"a number, true or false, or an array, or remove the member to leave it unset.", shown(a.name), a.found)
		} else {
			sign := "an equals sign"
			if a.colon {
				sign = "a colon"
			}
			d.Detail = fmt.Sprintf("%q has %s and then %s, where its value must start, on the same line: give it one, such as a string in quotes, "+
				"a number, true or false, or a list in brackets, or delete the line to leave it unset.", shown(a.name), sign, a.found)
		}
		d.Subject, d.Context, d.Extra = rng.Ptr(), nil, ownWords{}
	}
	return diags
}

// unvalued is an argument written without its value: its name, the offsets of the name's start
// and of the end of its equals sign (or colon), and what stands where the value should, in words.
type unvalued struct {
	name     string
	from, to int
	colon    bool
	found    string
}

// hclNameBefore reads, of a native-syntax file's tokens, the argument whose value should start
// at offset at: the token before at's is an equals sign or a colon, and the one before that a
// name or a quoted key.
func hclNameBefore(toks hclsyntax.Tokens, at int) (a unvalued, ok bool) {
	i := 0
	for i < len(toks) && toks[i].Range.Start.Byte < at {
		i++
	}
	if i < 2 || i >= len(toks) || toks[i].Range.Start.Byte != at ||
		toks[i-1].Type != hclsyntax.TokenEqual && toks[i-1].Type != hclsyntax.TokenColon {
		return unvalued{}, false
	}
	a.to, a.colon = toks[i-1].Range.End.Byte, toks[i-1].Type == hclsyntax.TokenColon
	start := i - 2 // the name's first token
	switch n := toks[i-2]; {
	case n.Type == hclsyntax.TokenIdent:
		a.name = string(n.Bytes)
	case n.Type == hclsyntax.TokenCQuote && i >= 4 && toks[i-3].Type == hclsyntax.TokenQuotedLit && toks[i-4].Type == hclsyntax.TokenOQuote:
		a.name, start = string(toks[i-3].Bytes), i-4
	case n.Type == hclsyntax.TokenCQuote && i >= 3 && toks[i-3].Type == hclsyntax.TokenOQuote: // ""
		start = i - 3
	default:
		return unvalued{}, false
	}
	a.from = toks[start].Range.Start.Byte
	// The name begins an argument or an object's item (not `[for v in list : ]`, whose colon
	// follows the list).
	if start > 0 {
		switch toks[start-1].Type {
		case hclsyntax.TokenNewline, hclsyntax.TokenComment, hclsyntax.TokenOBrace, hclsyntax.TokenComma:
		case hclsyntax.TokenCQuote, hclsyntax.TokenIdent, hclsyntax.TokenNumberLit, hclsyntax.TokenCBrace, hclsyntax.TokenCBrack:
			// After another item's value on its line (`name = "db" id =`), as HCL1 reads
			// items side by side: an argument too (an equals sign only: a colon there is a
			// `for` expression's). Named, where HCL's bare "Invalid expression" at the end of
			// the line showed no caret (TestValidateNamesAnArgumentWithoutItsValueAfterAnotherOnItsLine).
			if a.colon {
				return unvalued{}, false
			}
		default:
			return unvalued{}, false
		}
	}
	switch toks[i].Type {
	case hclsyntax.TokenNewline:
		a.found = "the end of the line"
	case hclsyntax.TokenEOF:
		a.found = "the end of the file"
	case hclsyntax.TokenComment:
		a.found = "a comment"
	case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenComma:
		a.found = closerWords(toks[i].Bytes[0])
	default: // something stands there: an invalid character, a second sign, which HCL's words name
		return unvalued{}, false
	}
	return a, true
}

// jsonKeyBefore reads, of JSON src, the member whose value should start at offset at: before
// it, past white space, a colon, and before that a key.
func jsonKeyBefore(src []byte, at int) (a unvalued, ok bool) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	i := min(at, len(src)) - 1
	for i >= 0 && isSpace(src[i]) {
		i--
	}
	if i < 0 || src[i] != ':' {
		return unvalued{}, false
	}
	a.to, a.colon = i+1, true
	for i--; i >= 0 && isSpace(src[i]); i-- {
	}
	if i < 1 || src[i] != '"' {
		return unvalued{}, false
	}
	end := i + 1
	for i--; i >= 0; i-- {
		if src[i] != '"' {
			continue
		}
		backslashes := 0
		for j := i - 1; j >= 0 && src[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			break
		}
	}
	if i < 0 || json.Unmarshal(src[i:end], &a.name) != nil {
		return unvalued{}, false
	}
	a.from = i
	rest := bytes.TrimLeft(src[min(at, len(src)):], " \t\r\n")
	switch {
	case len(rest) == 0:
		a.found = "the end of the file"
	case bytes.IndexByte([]byte("}],"), rest[0]) >= 0:
		a.found = closerWords(rest[0])
	default:
		return unvalued{}, false
	}
	return a, true
}

// closerWords names a closing brace, bracket or parenthesis, or a comma.
func closerWords(c byte) string {
	switch c {
	case '}':
		return "a closing brace"
	case ']':
		return "a closing bracket"
	case ')':
		return "a closing parenthesis"
	}
	return "a comma"
}
