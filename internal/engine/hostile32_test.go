package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestEscapedEchoedSecretsScrubbedOnEveryPath is TestEchoedSecretsScrubbedOnEveryPath with a
// plugin that echoes every value in a quoted dump, as it reads once the dump's escapes are
// undone but not as its bytes spell it: every character as JSON's \uNNNN (either case), an
// ANSI colour written inside it as Go or JSON quotes it (\x1b[31m, \u001b[0m), a zero width
// space as \u200b. Whoever reads the error, the event or --json (a JSON reader undoes the
// escapes) sees the value whole. Before, every path showed each of them.
func TestEscapedEchoedSecretsScrubbedOnEveryPath(t *testing.T) {
	t.Parallel()
	every := func(upper bool) func(string) string {
		return func(s string) string {
			var b strings.Builder
			for _, r := range s {
				f := `\u%04x`
				if upper {
					f = `\u%04X`
				}
				fmt.Fprintf(&b, f, r)
			}
			return b.String()
		}
	}
	inside := func(ins string) func(string) string {
		return func(s string) string { return s[:len(s)/2] + ins + s[len(s)/2:] }
	}
	encodings := map[string]func(string) string{
		"every character as \\u":             every(false),
		"every character as \\u, upper-case": every(true),
		"ANSI colour quoted by Go":           inside(`\x1b[31m`),
		"ANSI reset quoted by JSON":          inside(`\u001b[0m`),
		"zero width space quoted":            inside(`\u200b`),
		"ANSI colour as octal":               inside(`\033[1m`),
	}
	echoedSecretsScrubbed(t, echoSentinels{secret: "echo-secret@7f3a/x y+z?", volFlag: "volflag:7f3a/p@ss=?",
		claimFlag: "claimflag 7f3a+q@r", other: "other-volume-secret/7f3a:s@t"}, encodings)
}

// TestEscapedControlsEchoedScrubbedOnEveryPath is TestEscapedEchoedSecretsScrubbedOnEveryPath
// with a plugin that writes inside every value a control byte's escape a reader decoding the
// dump carries out (scrub35): a character backspaced over as JSON writes it ("X\b"), a bell and
// Rust's NUL, which show as nothing. Before, every path showed each of them.
func TestEscapedControlsEchoedScrubbedOnEveryPath(t *testing.T) {
	t.Parallel()
	inside := func(ins string) func(string) string {
		return func(s string) string { return s[:len(s)/2] + ins + s[len(s)/2:] }
	}
	echoedSecretsScrubbed(t, echoSentinels{secret: "echo-secret@7f3a/x y+z?", volFlag: "volflag:7f3a/p@ss=?",
		claimFlag: "claimflag 7f3a+q@r", other: "other-volume-secret/7f3a:s@t"}, map[string]func(string) string{
		"a character backspaced over": inside(`X\b`),
		"a bell":                      inside(`\a`),
		"Rust's NUL":                  inside(`\0`),
	})
}
