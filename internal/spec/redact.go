package spec

import (
	"bytes"
	"regexp"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Diagnostic snippets echo the spec's source, and a line of a secrets map or of mount_flags
// holds sensitive values. Before a snippet is printed, redactSource masks every string in
// the values of secrets, env and mount_flags with '*', byte for byte, so positions and caret
// marks stay where they were. It works on tokens, not on a parsed body, so it also covers
// files with syntax errors.

// sensitiveNames are the arguments (or map blocks) whose strings never appear in output.
var sensitiveNames = map[string]bool{"secrets": true, "env": true, "mount_flags": true}

// redactSource returns a copy of src with sensitive strings masked.
func redactSource(src []byte, json bool) []byte {
	out := bytes.Clone(src)
	if json {
		redactJSON(out)
		return out
	}
	toks, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	mask := func(t hclsyntax.Token) {
		for i := t.Range.Start.Byte; i < t.Range.End.Byte && i < len(out); i++ {
			if out[i] != '\n' {
				out[i] = '*'
			}
		}
	}
	for i := 0; i < len(toks); i++ {
		if toks[i].Type != hclsyntax.TokenIdent || !sensitiveNames[string(toks[i].Bytes)] {
			continue
		}
		j := i + 1
		if j < len(toks) && toks[j].Type == hclsyntax.TokenEqual {
			j++
		}
		if j >= len(toks) {
			break
		}
		// Mask every literal up to the end of the value: a balanced {...} or [...], or, for a
		// plain value, the rest of the line.
		block := toks[j].Type == hclsyntax.TokenOBrace || toks[j].Type == hclsyntax.TokenOBrack
		depth := 0
		k := j
		for ; k < len(toks); k++ {
			t := toks[k]
			switch t.Type {
			case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
				hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
				depth++
			case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenTemplateSeqEnd:
				depth--
			case hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit:
				// Keys stay readable (diagnostics name them anyway); values are masked.
				isKey := k >= 2 && k+2 < len(toks) && toks[k+1].Type == hclsyntax.TokenCQuote &&
					(toks[k+2].Type == hclsyntax.TokenEqual || toks[k+2].Type == hclsyntax.TokenColon) &&
					(toks[k-2].Type == hclsyntax.TokenOBrace || toks[k-2].Type == hclsyntax.TokenComma || endsLine(toks[k-2]))
				if !isKey {
					mask(t)
				}
			}
			if block && depth <= 0 || !block && depth <= 0 && (endsLine(t) || t.Type == hclsyntax.TokenEOF) {
				break
			}
		}
		i = k
	}
	return out
}

var jsonSensitiveKey = regexp.MustCompile(`"(secrets|env|mount_flags)"\s*:\s*`)

// redactJSON masks, in place, the strings of the values of sensitive keys in JSON source.
func redactJSON(b []byte) {
	for _, loc := range jsonSensitiveKey.FindAllIndex(b, -1) {
		i := loc[1]
		depth := 0
		for i < len(b) {
			c := b[i]
			switch {
			case c == '"' && jsonKeyAt(b, i):
				i = skipJSONString(b, i)
				continue
			case c == '"':
				i = maskJSONString(b, i)
				if depth == 0 {
					i = len(b) // a plain string value: done
				}
				continue
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
			}
			i++
			if depth <= 0 {
				break
			}
		}
	}
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
