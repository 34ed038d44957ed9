package cli

import (
	"bytes"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/display"
)

// helpWidth is the width --help is laid out for: the terminal of 80 columns a help text is
// read in when nothing else is known. The descriptions are written at about 95 and the flags'
// usage lines ran to 170: an 80-column terminal broke them mid-word, one line in three.
const helpWidth = 80

// The template functions wrapHelp's templates call, added once: cobra keeps them in a map of
// its own, which adding them at every root's making (as before) wrote while another root, in
// another goroutine (the tests', in parallel), read it to render its help: a data race.
func init() {
	cobra.AddTemplateFunc("wrapProse", wrapProse)
	cobra.AddTemplateFunc("flagUsages", flagUsages)
}

// wrapHelp lays c's help (and, as cobra inherits templates, that of every command under it)
// out for helpWidth columns: its description's prose paragraphs are filled again
// (wrapProse), each flag's usage wraps under its own column (pflag's FlagUsagesWrapped), and
// the closing pointer to a subcommand's help is shorter.
// Only the layout changes: Long, Example and the flags' words stay as written, so the man
// pages, made from them, are untouched, and an example is never broken (a script runs them).
func wrapHelp(c *cobra.Command) {
	help := strings.Replace(c.HelpTemplate(), "{{. | trimTrailingWhitespaces}}", "{{. | trimTrailingWhitespaces | wrapProse}}", 1)
	usage := c.UsageTemplate()
	for _, set := range []string{".LocalFlags", ".InheritedFlags"} {
		usage = strings.Replace(usage, "{{"+set+".FlagUsages | ", "{{flagUsages "+set+" | ", 1)
	}
	// "volctl volume snapshot [command] --help" left 80 columns behind with cobra's words.
	const more = `--help" for more information about a command.`
	if strings.Count(usage, more) != 1 {
		panic("cli: cobra's usage template changed; wrapHelp must follow it")
	}
	usage = strings.Replace(usage, more, `--help" for more about a command.`, 1)
	if help == c.HelpTemplate() || strings.Count(usage, "{{flagUsages ") != 2 {
		panic("cli: cobra's help templates changed; wrapHelp must follow them") // caught by every test that builds the root
	}
	c.SetHelpTemplate(help)
	c.SetUsageTemplate(usage)
	// Help from a template is written by text/template, whose write error cobra prints
	// ("write |1: broken pipe" after `volctl --help | head -1`). It is made whole here, then
	// written, and a failed write is told as any other output's is (Report, IOStreams.OutError;
	// a reader gone, EPIPE, not at all).
	templated := c.HelpFunc()
	c.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		out := cmd.OutOrStdout()
		var buf bytes.Buffer
		cmd.SetOut(&buf)
		templated(cmd, args)
		cmd.SetOut(out)
		_, _ = out.Write(buf.Bytes())
	})
}

// flagUsages is fs's flags as pflag lists them, each usage wrapped under its own column
// (FlagUsagesWrapped), with each value as the flag declared it: pflag leaves out a default
// that is its value type's zero, which it tells by the value's type, hidden behind the
// wrappers refuseRepeatedFlags puts on every flag. A repeatable flag left out, an empty list,
// showed as "(default [])" (TestHelpShowsNoDefaultOfAnEmptyList).
func flagUsages(fs *pflag.FlagSet) string {
	shown := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	shown.SortFlags = fs.SortFlags
	fs.VisitAll(func(f *pflag.Flag) {
		g := *f
		switch v := f.Value.(type) {
		case *onceValue:
			g.Value = v.Value
		case *nonEmptyItems:
			g.Value = v.sliceValue
		}
		shown.AddFlag(&g)
	})
	return shown.FlagUsagesWrapped(helpWidth)
}

// wrapProse fills each paragraph of text (lines between blank ones) to helpWidth columns,
// when it is prose: one whose lines all start at the margin. A paragraph with an indented
// line (a table of files, a command to run, a list) is kept as it is: its line breaks mean
// something.
func wrapProse(text string) string {
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		prose := true
		for _, l := range lines {
			if l == "" || l[0] == ' ' || l[0] == '\t' {
				prose = false
				break
			}
		}
		if prose {
			paras[i] = fill(strings.Fields(p), helpWidth)
		}
	}
	return strings.Join(paras, "\n\n")
}

// fill lays words out in lines of at most width columns (a word longer than that on a line of
// its own).
func fill(words []string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range words {
		n := display.Width(w)
		switch {
		case col == 0:
		case col+1+n > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
	}
	return b.String()
}
