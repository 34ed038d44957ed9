package spec

import (
	"bytes"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// source is one spec file's bytes and what is read from them, once, for every pass over the
// same bytes: hclsyntax's tokens, which the nesting check of a file with non-ASCII code
// (nesting.go), the HCL1 rewrite (hcl1.go) and the mask (redact.go) all read, and the bytes
// with sensitive values masked, which the rewrite's refused numbers, hideMasked and every
// snippet of the file's diagnostics (the Parser's DiagnosticWriter) read. Each is computed on
// first use: a plain HCL2 file without a diagnostic lexes nothing here (hclsyntax's parser
// lexes it itself, and keeps its tokens), and no file is lexed twice, nor masked twice, however
// many diagnostics it has (TestOneLexPerParse). The rewritten bytes the HCL2 parser reads
// after the rewrite are other bytes, and lexed by it.
type source struct {
	filename string
	src      []byte
	json     bool

	toks     hclsyntax.Tokens
	masked   []byte
	lexed    bool // toks is set
	masks    bool // masked is set
	lexes    int  // times lexed, for tests
	maskings int  // times masked, for tests
}

func newSource(filename string, src []byte, json bool) *source {
	return &source{filename: filename, src: src, json: json}
}

// tokens returns hclsyntax's tokens of the file (read as native syntax). Of a file of more
// than MaxItems items, which checkItems refuses, it returns those of the items up to the one
// past the limit: lexed whole, it would take what that check bounds (some hundred bytes a token).
func (s *source) tokens() hclsyntax.Tokens {
	if !s.lexed {
		src := s.src
		if end := s.pastItems(); end >= 0 {
			src = s.src[:end]
		}
		s.toks, _ = hclsyntax.LexConfig(src, s.filename, hcl.InitialPos)
		s.lexed = true
		s.lexes++
	}
	return s.toks
}

// redacted returns the file's bytes with sensitive values masked (redactSource). It is shared:
// never written to.
//
// A file of more than MaxItems items, which checkItems refuses, is not lexed whole (that is
// what the limit bounds): its items up to the one past the limit are masked as any file's, and
// what comes after them, which no diagnostic points at, is blanked.
func (s *source) redacted() []byte {
	if !s.masks {
		src := s.src
		if end := s.pastItems(); end >= 0 {
			src = s.src[:end] // what tokens lexes; a JSON mask reads no more either
		}
		s.masked = redactTokens(src, s.json, s.tokens)
		if len(src) < len(s.src) {
			s.masked = append(s.masked, bytes.Map(func(r rune) rune {
				if r == '\n' {
					return r
				}
				return ' '
			}, s.src[len(src):])...)
		}
		s.masks = true
		s.maskings++
	}
	return s.masked
}

// pastItems is where the item past MaxItems ends, or -1 for a file of no more.
func (s *source) pastItems() int {
	at := itemLimitAt(s.src, MaxItems)
	if at < 0 {
		return -1
	}
	_, n := utf8.DecodeRune(s.src[at:])
	return at + n
}

// settle ends the parse that made diags: the tokens, some hundred bytes each, are not kept
// with the file (a Parser keeps every file it read, for its diagnostics), but when a snippet
// will show the file, the masked bytes it reads are made from them first.
func (s *source) settle(diags hcl.Diagnostics) {
	if s.lexed {
		for _, d := range diags {
			if d.Subject != nil {
				s.redacted()
				break
			}
		}
	}
	s.toks, s.lexed = nil, false
}
