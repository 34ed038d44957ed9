package spec

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// StrayText says what in s, a path or an address given in a flag or a variable, no one means:
// a control character (a newline from $(cat FILE), a CR from a CRLF file), blanks only, a
// blank before or after it; "" when there is none. A blank inside is the value's own. The
// caller names the flag or variable and says what to write.
func StrayText(s string) string {
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("holds a control character (%q; a newline from $(cat FILE), a CR from a CRLF file?)", r)
	}
	switch {
	case s != "" && strings.TrimSpace(s) == "":
		return "is blanks only"
	case strings.TrimLeftFunc(s, unicode.IsSpace) != s:
		return "begins with a blank"
	case strings.TrimRightFunc(s, unicode.IsSpace) != s:
		return "ends with a blank"
	}
	return ""
}
