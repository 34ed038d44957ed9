package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestHelpFitsEightyColumns: every command's --help fits an 80-column terminal, its examples
// aside (a command line is kept whole, as it is run). The descriptions were written at about
// 95 columns and the flags' usage ran on one line to 170: such a terminal broke a third of the
// lines mid-word.
func TestHelpFitsEightyColumns(t *testing.T) {
	forEachHelp(t, func(c *cobra.Command, help string) {
		inExamples := false
		for line := range strings.SplitSeq(help, "\n") {
			switch {
			case line == "Examples:":
				inExamples = true
			case line != "" && line[0] != ' ':
				inExamples = false
			}
			if w := display.Width(line); w > helpWidth && !inExamples {
				t.Errorf("%s --help: a line of %d columns: %q", c.CommandPath(), w, line)
			}
		}
	})
}

// forEachHelp calls f with every command of the tree and its --help.
func forEachHelp(t *testing.T, f func(c *cobra.Command, help string)) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		f(c, out.String())
	}
	walk(NewRootCmd(NewFactory(ios)))
}

// TestWrapProse: a paragraph of prose is filled to the width; one with an indented line (a
// table, a command) is kept line for line; blank lines between paragraphs stay.
func TestWrapProse(t *testing.T) {
	long := strings.Repeat("word ", 30)
	table := "  a.hcl    " + strings.Repeat("x", 90) + "\n  b.hcl    y"
	got := wrapProse(long + "\n\n" + table)
	paras := strings.Split(got, "\n\n")
	if len(paras) != 2 || paras[1] != table {
		t.Fatalf("wrapProse = %q; want two paragraphs, the table kept", got)
	}
	for line := range strings.SplitSeq(paras[0], "\n") {
		if len(line) > helpWidth || strings.HasSuffix(line, " ") {
			t.Errorf("filled line %q: more than %d columns, or a trailing space", line, helpWidth)
		}
	}
	if strings.Join(strings.Fields(paras[0]), " ") != strings.TrimSpace(long) {
		t.Errorf("filling changed the words: %q", paras[0])
	}
}

// TestHelpShowsNoDefaultOfAnEmptyList: a repeatable flag left out is an empty list, which
// --help leaves unsaid as pflag does for its own list flags. volctl's wrapping of every flag's
// value (refuseRepeatedFlags) hid the value's type from pflag, which then printed the empty
// list as a default: `--group stringArray ... (default [])`, and for export nomad's
// --datacenter, whose usage names its default, two defaults that disagree:
// `(default "*") (default [])`.
func TestHelpShowsNoDefaultOfAnEmptyList(t *testing.T) {
	forEachHelp(t, func(c *cobra.Command, help string) {
		if i := strings.Index(help, "(default [])"); i >= 0 {
			t.Errorf("%s --help shows an empty list as a default: %q", c.CommandPath(), help[max(0, i-120):i+len("(default [])")])
		}
	})
}

// TestHelpNamesNoGoIdentifier: --help is for the user at the terminal, who can act on a flag,
// a file or a command, never on a function of volctl's source. `volctl events --help` said the
// log keeps its newest events "(store.WithEventLimit; 10,000 by default)": a setter only the
// tests have, which no flag, variable or file reaches.
func TestHelpNamesNoGoIdentifier(t *testing.T) {
	goName := regexp.MustCompile(`\b(store|engine|spec|csi|tui|cli|agent|nomad|display|hostpath|procfs|pathtrust|iostreams)\.[A-Z][A-Za-z]+`)
	forEachHelp(t, func(c *cobra.Command, help string) {
		if m := goName.FindString(help); m != "" {
			t.Errorf("%s --help names %s, a Go identifier of volctl's source", c.CommandPath(), m)
		}
	})
}
