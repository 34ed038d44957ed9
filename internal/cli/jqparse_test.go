package cli

import (
	"strings"
	"testing"
)

// TestJQParseErrorSaysWhere: a --jq filter gojq cannot parse was refused with what it met
// alone, `unexpected token "|"`, not where: in a filter of several pipes (or lines, in a
// script) the user had to find it. The error says the column, and the line of a filter of
// several; one that ends too soon says so.
func TestJQParseErrorSaysWhere(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	for _, tt := range []struct{ filter, want string }{
		{".a | ]", `unexpected token "]" at column 6`},
		{"map(.name) || 1", `unexpected token "|" at column 13`},
		{`"é" | ]`, `unexpected token "]" at column 7`}, // columns count characters, not bytes
		{".[] |\n  select(.x) |\n  ]", `unexpected token "]" at line 3, column 3`},
		{`.a + "\q"`, `invalid escape sequence "\q" in string literal at column 7`},
		{".foo | map(.x", "unexpected EOF at the end of the filter"},
		// gojq names the token before a string with an interpolation (".a") and places it
		// past the quote: it read `unexpected token ".a" at column 3`, the space (review28d).
		{`.a "\(1)"`, `unexpected token at column 4`},
		{".a |\n  .b \"x\\(1)\"", `unexpected token at line 2, column 6`},
	} {
		_, err := execRoot(t, "volume", "status", "--jq", tt.filter)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--jq %q: err = %v (exit %d), want exit %d saying %q", tt.filter, err, ExitCode(err), ExitUsage, tt.want)
		}
	}
}
