package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestHelpExamplesParse holds every command's --help examples to the command: each volctl
// command line in an Example (up to a pipe, ;, && or ||) names the command it is listed under
// (or another that exists), and its flags and argument count are ones that command takes. A
// flag renamed or dropped, or an argument the command no longer takes, shows in the help a
// user copies from, and the command refuses it (exit 2).
func TestHelpExamplesParse(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		for line := range strings.SplitSeq(c.Example, "\n") {
			for _, words := range exampleCommands(line) {
				checkExample(t, c, words)
			}
		}
	}
	walk(root)
}

// exampleCommands is the volctl command lines in one line of an Example, as words: a shell
// line split at |, ;, && and ||, quotes taken off; a comment (#) ends it.
func exampleCommands(line string) [][]string {
	var (
		cmds  [][]string
		words []string
		word  strings.Builder
		inW   bool
		quote rune
	)
	end := func() {
		if inW {
			words = append(words, word.String())
			word.Reset()
			inW = false
		}
	}
	cut := func() {
		end()
		if len(words) > 0 && words[0] == "volctl" {
			cmds = append(cmds, words)
		}
		words = nil
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inW = r, true
		case r == '#' && !inW:
			cut()
			return cmds
		case r == '|' || r == ';' || r == '&':
			cut()
			for i+1 < len(rs) && (rs[i+1] == '|' || rs[i+1] == '&') {
				i++
			}
		case r == ' ' || r == '\t':
			end()
		default:
			word.WriteRune(r)
			inW = true
		}
	}
	cut()
	return cmds
}

func checkExample(t *testing.T, listed *cobra.Command, words []string) {
	t.Helper()
	example := strings.Join(words, " ")
	// A tree of its own: flags keep what a parse set (-t refuses a --jq set before it).
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		t.Errorf("%s --help: example %q: %v", listed.CommandPath(), example, err)
		return
	}
	fs := pflag.NewFlagSet(cmd.CommandPath(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(cmd.InheritedFlags())
	if err := fs.Parse(slices.Clone(rest)); err != nil {
		t.Errorf("%s --help: example %q: %s refuses its flags: %v", listed.CommandPath(), example, cmd.CommandPath(), err)
		return
	}
	if cmd.Args != nil {
		if err := cmd.Args(cmd, fs.Args()); err != nil {
			t.Errorf("%s --help: example %q: %s refuses its arguments %q: %v", listed.CommandPath(), example, cmd.CommandPath(), fs.Args(), err)
		}
	}
}
