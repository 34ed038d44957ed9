package spec

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// HCLQuoted is s as a quoted HCL string that both HCL1 (Nomad's volume files) and volctl's
// reader take back as s (AppendHCLEscaped's HCL1 form): what an error's advice writes for a
// line to paste into a spec, such as `external_id = "..."`. Go's %q wrote a plugin's ID holding
// "${" or "%{" as a template sequence, and the pasted line did not parse
// (TestAdviceToRegisterWritesTheExternalIDAsASpecReadsIt).
func HCLQuoted(s string) string { return string(AppendHCLQuoted(nil, s, true)) }

// HCLQuotedASCII is HCLQuoted with every character past ASCII written as its escape too
// (\uXXXX), as %+q writes them: for an ID whose difference from another is one of spelling
// (full-width forms, a decomposed accent), which the reader is to see.
func HCLQuotedASCII(s string) string {
	q := AppendHCLQuoted(nil, s, true)
	out := make([]byte, 0, len(q))
	for _, r := range string(q) {
		switch {
		case r < utf8.RuneSelf:
			out = append(out, byte(r))
		case r <= 0xffff:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = fmt.Appendf(out, `\U%08x`, r)
		}
	}
	return string(out)
}

// AppendHCLQuoted appends s quoted for HCL (AppendHCLEscaped between double quotes).
func AppendHCLQuoted(out []byte, s string, hcl1 bool) []byte {
	return append(AppendHCLEscaped(append(out, '"'), s, hcl1), '"')
}

// AppendHCLEscaped appends s escaped for a quoted HCL string so that it reads back as s: its
// template sequences "${" and "%{" doubled, as hclwrite writes them. With hcl1, their brace is
// written as the escape \u007b instead: HCL1 knows no doubling (it would keep "$${" as it is,
// and reads an unclosed "${" on, across the closing quote, to a brace), while both HCL1 and HCL2
// read \u007b as a plain "{" that starts nothing.
func AppendHCLEscaped(out []byte, s string, hcl1 bool) []byte {
	skip := false // the "{" just written as \u007b
	for i, r := range s {
		if skip {
			skip = false
			continue
		}
		switch r {
		case '\n':
			out = append(out, `\n`...)
		case '\r':
			out = append(out, `\r`...)
		case '\t':
			out = append(out, `\t`...)
		case '"':
			out = append(out, `\"`...)
		case '\\':
			out = append(out, `\\`...)
		case '$', '%':
			out = append(out, byte(r))
			switch {
			case i+1 >= len(s) || s[i+1] != '{':
			case hcl1:
				out = append(out, `\u007b`...)
				skip = true
			default:
				out = append(out, byte(r))
			}
		default:
			switch {
			case unicode.IsPrint(r):
				out = utf8.AppendRune(out, r) // an invalid byte is written as U+FFFD
			case r <= 0xffff:
				out = fmt.Appendf(out, `\u%04x`, r)
			default:
				out = fmt.Appendf(out, `\U%08x`, r)
			}
		}
	}
	return out
}
