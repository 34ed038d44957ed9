package cli

import (
	"bytes"
	"context"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestHelpExamplesParse holds every command's --help examples to the command: each volctl
// command line in an Example (up to a pipe, ;, && or ||) names the command it is listed under
// (or another that exists), and its flags and argument count are ones that command takes. A
// flag renamed or dropped, or an argument the command no longer takes, shows in the help a
// user copies from, and the command refuses it (exit 2).
func TestHelpExamplesParse(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	forEachExample(NewRootCmd(NewFactory(ios)), func(listed *cobra.Command, words []string) {
		checkExample(t, listed, words)
	})
}

// forEachExample calls f with each volctl command line of the Example of c and of every
// command under it, as words (exampleCommands), and the command whose help lists it.
func forEachExample(c *cobra.Command, f func(listed *cobra.Command, words []string)) {
	for _, sub := range c.Commands() {
		forEachExample(sub, f)
	}
	for line := range strings.SplitSeq(c.Example, "\n") {
		for _, words := range exampleCommands(line) {
			f(c, words)
		}
	}
}

// exampleCommands is the volctl command lines in one line of an Example, as words: a shell
// line split at |, ;, && and ||, and into what $(...) runs, quotes taken off; a comment (#)
// ends it. The environment a line sets for its command (NOMAD_ADDR=... volctl) and a sudo in
// front are not the command's words.
func exampleCommands(line string) [][]string {
	var (
		cmds  [][]string
		words []string
		word  strings.Builder
		inW   bool
		quote rune
		outer []subshellOuter // the commands a $( is inside of
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
		for len(words) > 0 && (words[0] == "sudo" || envAssignment.MatchString(words[0])) {
			words = words[1:]
		}
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
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			outer = append(outer, subshellOuter{words, word.String(), inW})
			words, inW = nil, false
			word.Reset()
			i++
		case r == ')' && len(outer) > 0:
			cut()
			o := outer[len(outer)-1]
			outer = outer[:len(outer)-1]
			// The outer command gets a word for what $(...) prints: --node-id $(hostname).
			words, inW = o.words, true
			word.Reset()
			word.WriteString(o.word + "$(...)")
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

// subshellOuter is the command line a $(...) interrupts: its words so far and the word it is in.
type subshellOuter struct {
	words []string
	word  string
	inW   bool
}

// envAssignment is a shell word setting a variable for the command after it.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func TestExampleCommandsFindEveryVolctlLine(t *testing.T) {
	for line, want := range map[string]string{
		"NOMAD_ADDR=http://127.0.0.1:4646 volctl nomad register db":     "volctl nomad register db",
		"sudo volctl quickstart --keep":                                 "volctl quickstart --keep",
		"volctl plugin serve hostpath --node-id $(hostname) --root /r":  "volctl plugin serve hostpath --node-id $(...) --root /r",
		"TARGET=$(volctl volume claim db --alloc web-0 -t '{{.x}}')":    "volctl volume claim db --alloc web-0 -t {{.x}}",
		"nomad volume deregister db && volctl nomad release db":         "volctl nomad release db",
		"volctl events --follow --json | jq -r 'select(.code != null)'": "volctl events --follow --json",
	} {
		cmds := exampleCommands(line)
		if len(cmds) != 1 || strings.Join(cmds[0], " ") != want {
			t.Errorf("exampleCommands(%q) = %q, want [%q]", line, cmds, want)
		}
	}
}

// templateExampleOutputs is what each command whose help has a -t example prints, by the
// command's path and whether the example names one object (an ID argument) or asks for all.
var templateExampleOutputs = map[string]func(oneObject bool) any{
	"volctl create":               func(bool) any { return []engine.VolumeInfo{} },
	"volctl volume create":        func(bool) any { return []engine.VolumeInfo{} },
	"volctl group status":         pick(engine.GroupInfo{}, []engine.GroupInfo{}),
	"volctl plugin probe":         func(bool) any { return pluginProbeResult{} },
	"volctl plugin status":        pick(engine.PluginInfo{}, []engine.PluginInfo{}),
	"volctl volume claim":         func(bool) any { return engine.ClaimInfo{} },
	"volctl volume snapshot list": func(bool) any { return engine.SnapshotList{} },
	"volctl volume status":        pick(engine.VolumeInfo{}, []engine.VolumeSummary{}),
}

func pick(one, all any) func(bool) any {
	return func(oneObject bool) any {
		if oneObject {
			return one
		}
		return all
	}
}

// TestHelpTemplateExamplesRunOnSparseOutput runs every -t example of the help on the sparsest
// object its command can print: every array holding one element, every field that is left out
// when empty (docs/json.md: "or absent") left out. A template reading such a field bare fails
// with exit 2 on the output of a real plugin, "map has no entry for key", where the user copied
// it from the help (snapshot list's source_volume_id, absent for a snapshot volctl does not know
// the volume of).
func TestHelpTemplateExamplesRunOnSparseOutput(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	forEachExample(NewRootCmd(NewFactory(ios)), func(listed *cobra.Command, words []string) {
		runTemplateExample(t, listed, words)
	})
}

func runTemplateExample(t *testing.T, listed *cobra.Command, words []string) {
	t.Helper()
	example := strings.Join(words, " ")
	ios, _, _, _ := iostreams.Test()
	cmd, rest, err := NewRootCmd(NewFactory(ios)).Find(words[1:])
	if err != nil {
		return // TestHelpExamplesParse says so
	}
	fs := pflag.NewFlagSet(cmd.CommandPath(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	if fs.Parse(slices.Clone(rest)) != nil || fs.Lookup("template") == nil || !fs.Changed("template") {
		return
	}
	output, ok := templateExampleOutputs[cmd.CommandPath()]
	if !ok {
		t.Errorf("%s --help: example %q: add what %s prints to templateExampleOutputs", listed.CommandPath(), example, cmd.CommandPath())
		return
	}
	v := reflect.New(reflect.TypeOf(output(fs.NArg() > 0))).Elem()
	fillOne(v)
	e := exportFlags{Template: fs.Lookup("template").Value.String()}
	if err := e.Write(context.Background(), &bytes.Buffer{}, v.Interface()); err != nil {
		t.Errorf("%s --help: example %q fails on an output without the fields left out when empty: %v", listed.CommandPath(), example, err)
	}
}

// fillOne gives every slice in v one zero element, and fills those, leaving everything else
// zero: what encoding/json leaves out when empty stays out.
func fillOne(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			fillOne(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillOne(v.Field(i))
			}
		}
	}
}
