// Package shellquotetest checks commands volctl tells the user to run by running them through
// sh, volctl replaced by a function that prints its arguments.
package shellquotetest

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// HostileIDs are IDs a user or a plugin may give that a shell would read as something else,
// or volctl as a flag, when printed raw in a command to run.
var HostileIDs = []string{"db?x", "a b", "$(x)", "`x`", "-rf", "--force", "it's", `say "hi"`, `a\b`, "x;y", "a*", "~x", "!x",
	"a&b", "a|b", "#x", "x#", "{a,b}", "[ab]", "a\tb", "a\nb", "", "'", "''", "é ü", "a\u00a0b"}

// RunArgs runs command through sh -c with volctl and nomad functions that print their
// arguments, and returns the arguments the command's last word of those two names was given.
func RunArgs(t testing.TB, command string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `volctl() { for a; do printf '%s\0' "$a"; done; }; nomad() { volctl "$@"; }; `+command).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", command, err)
	}
	args := strings.Split(string(out), "\x00")
	return args[:len(args)-1]
}

var quoted = regexp.MustCompile("`((?:volctl|nomad) [^`]*)`")

// Commands are the commands in backquotes in text that start with volctl or nomad.
func Commands(text string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}
