package spec

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// unclosedAtEnd places the errors HCL's native parser gives at a file's very end, when the file
// ends inside something it opened and never closed, on what was left open: a heredoc without
// its closing marker ("Unterminated template string" at the last line, its context every line
// after the marker's, the `<<EOT` itself not shown), a map block or object without its closing
// brace ("Missing expression ... found the end of the file", with no line shown), a string
// without its closing quote. Pointed at the end, the error named neither the place nor the
// marker, and in a file of a hundred lines the user had to hunt for it
// (TestUnclosedAtTheEndIsPlacedOnWhatIsOpen). The diagnostic becomes one on the opener, in
// volctl's words: its line, what is missing (the marker, for a heredoc) and what to add.
// Only HCL's own diagnostics at the end of a native-syntax file are touched, and only when the
// file's tokens show something open there.
func unclosedAtEnd(diags hcl.Diagnostics, s *source) hcl.Diagnostics {
	if s.json {
		return diags
	}
	end := len(s.src)
	atEnd := func(d *hcl.Diagnostic) bool {
		_, own := d.Extra.(ownWords)
		return !own && d.Severity == hcl.DiagError && d.Subject != nil && d.Subject.Start.Byte >= end
	}
	found := false
	for _, d := range diags {
		found = found || atEnd(d)
	}
	if !found {
		return diags
	}
	open, ok := openAtEnd(s.tokens())
	if !ok {
		return diags
	}
	at := open.Range.Start.Byte
	text := bytes.TrimRight(open.Bytes, "\r\n")
	m := &offsetMap{src: s.src, lineStarts: lineStarts(s.src)}
	rng := hcl.Range{Filename: s.filename, Start: m.pos(at), End: m.pos(at + len(text))}
	summary, detail := unclosedWords(open.Type, text)
	detail = cutWords(detail) // a marker may be as long as the file
	for _, d := range diags {
		if atEnd(d) {
			d.Summary, d.Detail, d.Subject, d.Context, d.Extra = summary, detail, rng.Ptr(), nil, ownWords{}
		}
	}
	return diags
}

// openAtEnd returns the innermost token that opens something (a brace, bracket, parenthesis,
// string, heredoc or template sequence) left open at the end of toks. A closer that does not
// match the innermost opener is passed over, as the parser reports it on its own.
func openAtEnd(toks hclsyntax.Tokens) (hclsyntax.Token, bool) {
	var stack []hclsyntax.Token
	closes := func(t hclsyntax.TokenType) hclsyntax.TokenType {
		switch t {
		case hclsyntax.TokenCBrace:
			return hclsyntax.TokenOBrace
		case hclsyntax.TokenCBrack:
			return hclsyntax.TokenOBrack
		case hclsyntax.TokenCParen:
			return hclsyntax.TokenOParen
		case hclsyntax.TokenCQuote:
			return hclsyntax.TokenOQuote
		case hclsyntax.TokenCHeredoc:
			return hclsyntax.TokenOHeredoc
		}
		return hclsyntax.TokenNil
	}
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			stack = append(stack, t)
			continue
		}
		if len(stack) == 0 {
			continue
		}
		top := stack[len(stack)-1].Type
		if t.Type == hclsyntax.TokenTemplateSeqEnd && (top == hclsyntax.TokenTemplateInterp || top == hclsyntax.TokenTemplateControl) ||
			closes(t.Type) == top && top != hclsyntax.TokenNil {
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return hclsyntax.Token{}, false
	}
	return stack[len(stack)-1], true
}

// unclosedWords is the summary and detail for opener text (of token type ty) left open at the
// end of the file.
func unclosedWords(ty hclsyntax.TokenType, text []byte) (summary, detail string) {
	switch ty {
	case hclsyntax.TokenOHeredoc:
		marker := bytes.TrimPrefix(bytes.TrimPrefix(text, []byte("<<")), []byte("-"))
		return "Unterminated heredoc", fmt.Sprintf("The heredoc opened here with %s has no line holding its marker %s and nothing after it, ended by a newline "+
			"(the file's last line too), so it takes in the rest of the file. Add a line holding only %s where its text ends.", text, marker, marker)
	case hclsyntax.TokenOQuote:
		return "Unterminated string", "The string opened by this quote has no closing quote before the end of the file. Add one where the string ends."
	case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
		return "Unclosed template sequence", fmt.Sprintf("The sequence opened here with %s has no closing brace before the end of the file. Add one (}) where it ends.", text)
	case hclsyntax.TokenOBrack:
		return "Unclosed bracket", "There is no closing bracket (]) for this [ before the end of the file. Add one where the list ends."
	case hclsyntax.TokenOParen:
		return "Unclosed parenthesis", "There is no closing parenthesis for this ( before the end of the file."
	}
	return "Unclosed brace", "There is no closing brace (}) for this { before the end of the file. Add one where the block or map ends " +
		"(or, if this one is closed where you meant it, a block inside it lacks its own)."
}

// unterminatedEchoes drops the errors HCL's parsers add where another error stands at the
// same place, which are false there: the native template parser says "Unterminated template
// string" of any token it did not expect in a string, and a byte that is not UTF-8 or a line
// break in a quoted string is such a token, which the scanner reported already ("Invalid
// character encoding", "Invalid multi-line string"), though the string's closing quote is
// there (TestAStringsBadByteIsOneError); the JSON parser says "Root value must be object" of
// a top-level object it gave up on for any other error in it, "Unclosed object", a comma
// missing (TestAnUnclosedJSONObjectIsNotSaidToBeNoObject). Each sent the user looking for
// another problem than the one there.
func unterminatedEchoes(diags hcl.Diagnostics) hcl.Diagnostics {
	const unterminated, notObject = "Unterminated template string", "Root value must be object"
	reported, others := map[int]bool{}, false
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil && d.Summary != unterminated && d.Summary != notObject {
			reported[d.Subject.Start.Byte], others = true, true
		}
	}
	out := diags[:0]
	for _, d := range diags {
		if _, own := d.Extra.(ownWords); !own && d.Subject != nil &&
			(d.Summary == unterminated && reported[d.Subject.Start.Byte] || d.Summary == notObject && others) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// cutStringEchoes keeps, of hcl/json's errors, those up to a string it cut short at a line
// break (its closing quote left out, or a line break written raw in it), a carriage return
// (refused raw in a string, as the native form refuses it) or a control character after a
// backslash (no escape), and drops the rest, in other words than the cut's
// own: past it the parser reads the file out of step, the string's end as the start of another,
// and said that a comma was missing on the next line or an object unclosed at the top
// (TestACutJSONStringIsOneError). The cut itself is said in words that name it.
func cutStringEchoes(diags hcl.Diagnostics, s *source) hcl.Diagnostics {
	if !s.json {
		return diags
	}
	cut := -1
	for _, d := range diags {
		if _, own := d.Extra.(ownWords); own || d.Summary != "Invalid JSON string" || d.Subject == nil {
			continue
		}
		if b := d.Subject.Start.Byte; b < len(s.src) && s.src[b] < 0x20 && (cut < 0 || b < cut) {
			cut = b
		}
	}
	if cut < 0 {
		return diags
	}
	out := diags[:0]
	for _, d := range diags {
		if _, own := d.Extra.(ownWords); !own && d.Severity == hcl.DiagError && d.Subject != nil {
			switch at := d.Subject.Start.Byte; {
			case at == cut && d.Summary == "Invalid JSON string":
				d.Summary, d.Detail, d.Extra = cutStringWords(s.src, cut)
			case at > cut, d.Summary == "Unclosed object", d.Summary == "Unclosed array":
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// cutStringWords says why a JSON string ends at src[cut], a control character.
func cutStringWords(src []byte, cut int) (summary, detail string, extra any) {
	switch {
	case src[cut] == '\n' || src[cut] == '\r' && cut+1 < len(src) && src[cut+1] == '\n':
		return "Unterminated string", "This string has no closing quote on its line, and a JSON string cannot span lines: " +
			"add the quote where it ends, or write a line break in it as \\n.", ownWords{}
	case src[cut] == '\r':
		return "Invalid JSON string", "A JSON string cannot hold a carriage return written raw, which no terminal shows: write it as \\r, or leave it out.", ownWords{}
	}
	return "Invalid escape sequence", fmt.Sprintf("A backslash here escapes the control character %U, for which JSON has no escape: "+
		"write the backslash as \\\\ or leave it out.", rune(src[cut])), ownWords{}
}

// missingJSONComma places hcl/json's "Missing attribute seperator comma", which it reports
// where it stopped skipping (the end of the object or the file), on the member or item that
// follows a value without a comma (TestAMissingJSONCommaIsPlacedWhereItIsMissing).
func missingJSONComma(diags hcl.Diagnostics, s *source) hcl.Diagnostics {
	if !s.json {
		return diags
	}
	for _, d := range diags {
		if _, own := d.Extra.(ownWords); own || d.Summary != "Missing attribute seperator comma" {
			continue
		}
		at := commaMissingAt(s.src)
		if at < 0 {
			continue
		}
		m := &offsetMap{src: s.src, lineStarts: lineStarts(s.src)}
		_, n := utf8.DecodeRune(s.src[at:])
		rng := hcl.Range{Filename: s.filename, Start: m.pos(at), End: m.pos(at + n)}
		d.Subject, d.Context = rng.Ptr(), nil
		d.Detail = "A comma must appear between each property definition in an object, and between the items of an array: one is missing before this."
		d.Extra = ownWords{}
	}
	return diags
}

// commaMissingAt returns the offset of the first token of JSON src that follows a value (not
// an object's key) with no comma, colon or closing bracket between, or -1.
func commaMissingAt(src []byte) int {
	var stack []byte    // the open objects and arrays
	afterValue := false // the last token ended a value
	keyNext := false    // in an object, a string here is a key
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case c == ',' || c == ':':
			afterValue, keyNext = false, c == ',' && len(stack) > 0 && stack[len(stack)-1] == '{'
			i++
			continue
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			afterValue, keyNext = true, false
			i++
			continue
		}
		if afterValue && len(stack) > 0 {
			return i
		}
		switch {
		case c == '{' || c == '[':
			stack = append(stack, c)
			afterValue, keyNext = false, c == '{'
			i++
			continue
		case c == '"':
			i = jsonStringEnd(src, i)
		default: // a number or a keyword, up to what ends it
			for i++; i < len(src) && bytes.IndexByte([]byte(" \t\r\n,:]}\"[{"), src[i]) < 0; i++ {
			}
		}
		afterValue, keyNext = !keyNext, false
	}
	return -1
}
