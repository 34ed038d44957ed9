// Package shellquote writes the commands volctl tells the user to run ("run `volctl nomad
// release ID`") so that pasting one into a POSIX shell runs that command with those arguments:
// an ID or path is a plugin's or a user's string, and `db?x`, `a b`, `$(x)` or a quote printed
// raw would be read by the shell as something else (a glob, two words, a command), and one
// starting with "-" by volctl as a flag. Plain words are left as they are.
package shellquote

import (
	"slices"
	"strings"
)

// Arg is s as one word of a POSIX shell command line: s itself when every character is one no
// shell treats specially (ASCII letters and digits, and "@%+=:,./_-"), else s in single quotes,
// each single quote in it closing the quotes, escaped, and opening them again. The empty string
// is a pair of single quotes. Any other character is quoted, non-ASCII ones too: a space or a
// quote of another script (U+00A0, U+2019) would otherwise pass for what it is not.
func Arg(s string) string {
	if s != "" && strings.IndexFunc(s, special) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// special says r means something to a shell, or may.
func special(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
}

// Flag is the words of a flag and its value, the value quoted (Arg): "--name VALUE", or
// "--name=VALUE" when the value starts with "-", so that it reads as the flag's value and
// never as a flag of its own.
func Flag(name, value string) string {
	if strings.HasPrefix(value, "-") {
		return name + "=" + Arg(value)
	}
	return name + " " + Arg(value)
}

// Command is the command line cmd ARGS...: cmd is the program, its subcommands and any flags
// (Flag), as the shell is to read them, and each of args is quoted (Arg). When one of args starts
// with "-" they follow "--", which ends the flags, so that volctl reads it as the argument it
// is and not as a flag.
func Command(cmd string, args ...string) string { return CommandFlags(cmd, args) }

// CommandFlags is Command with flags (each a Flag, or a flag without a value) after the
// arguments, as volctl's help writes them ("volume release VOLUME --alloc ALLOC"); before them
// when the arguments follow "--", after which a flag would read as an argument.
func CommandFlags(cmd string, args []string, flags ...string) string {
	words := []string{cmd}
	dash := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") })
	if dash {
		words = append(append(words, flags...), "--")
	}
	for _, a := range args {
		words = append(words, Arg(a))
	}
	if !dash {
		words = append(words, flags...)
	}
	return strings.Join(words, " ")
}
