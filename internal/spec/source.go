package spec

import (
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
	maskedTo int  // masked is masked up to there, blanked after (len(src): as far as it will be)
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
func (s *source) redacted() []byte { return s.redactedTo(len(s.src)) }

// redactedTo returns the file's bytes with the sensitive values of src[:need] at least masked,
// and what comes after the part masked blanked (spaces, its line breaks kept, so every byte and
// line stays where it was). It is shared: never written to.
//
// A file the parse did not lex (a plain HCL2 file, JSON) is lexed here only as far as the
// diagnostics look: up to maskMargin past need, the first time. A mask reads forward only (a
// name, then its value), and where a part lexed stops mid-string, mid-heredoc or mid-comment,
// what it holds of it is a value's to the end (redactTokens), so src[:need] is masked at
// least as the whole file's mask masks it (TestMaskedPartMasksAsTheWholeFile). A file of
// 100,000 levels of nesting, its diagnostic on the first line, was lexed whole (a gigabyte of
// tokens for 1 MiB) for a snippet of 500 bytes. A later call needing more masks the whole file:
// no file is masked more than twice. A file the parse lexed is masked whole, from its tokens.
//
// A file of more than MaxItems items, which checkItems refuses, is not lexed whole (that is
// what the limit bounds): its items up to the one past the limit are masked as any file's, and
// what comes after them, which no diagnostic points at, is blanked.
func (s *source) redactedTo(need int) []byte {
	if s.masks && s.maskedTo >= min(need, len(s.src)) {
		return s.masked
	}
	end, all := len(s.src), len(s.src)
	if e := s.pastItems(); e >= 0 {
		end = e // what tokens lexes; a JSON mask reads no more either
	}
	if !s.lexed && !s.masks && need+maskMargin < end {
		end, all = need+maskMargin, need
	}
	lex := s.tokens
	if !s.lexed { // lexed for the mask alone: the tokens are not kept
		lex = func() hclsyntax.Tokens {
			s.lexes++
			toks, _ := hclsyntax.LexConfig(s.src[:end], s.filename, hcl.InitialPos)
			return toks
		}
	}
	s.masked = redactTokens(s.src[:end], s.json, lex)
	if end < len(s.src) {
		s.masked = append(s.masked, s.src[end:]...)
		for i := end; i < len(s.masked); i++ {
			if s.masked[i] != '\n' {
				s.masked[i] = ' '
			}
		}
	}
	s.masks, s.maskedTo = true, all
	s.maskings++
	return s.masked
}

// maskMargin is how far past what is needed redactedTo lexes a file: what a token cut there
// changes (a key taken for a value and masked, a character cut in two) stays clear of what
// is shown.
const maskMargin = 4 << 10

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
