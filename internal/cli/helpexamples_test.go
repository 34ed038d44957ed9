package cli

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
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
	if err := exampleRefused(words, true); err != nil {
		t.Errorf("%s --help: example %q: %v", listed.CommandPath(), strings.Join(words, " "), err)
	}
}

// exampleRefused is why volctl would refuse the command line words (its first word volctl)
// before running it: a command it does not have, a flag the command does not take or a value
// the flag refuses, and, with args, arguments the command does not take.
func exampleRefused(words []string, args bool) error {
	// A tree of its own: flags keep what a parse set (-t refuses a --jq set before it).
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet(cmd.CommandPath(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(cmd.InheritedFlags())
	if err := fs.Parse(slices.Clone(rest)); err != nil {
		return fmt.Errorf("%s refuses its flags: %v", cmd.CommandPath(), err)
	}
	// A command that only groups others refuses an argument as an unknown command
	// (rejectUnknownSubcommands), in its RunE: Find stops at it, the argument left over.
	if cmd.HasSubCommands() && fs.NArg() > 0 {
		return fmt.Errorf("%s has no command %q", cmd.CommandPath(), fs.Arg(0))
	}
	if args && cmd.Args != nil {
		if err := cmd.Args(cmd, fs.Args()); err != nil {
			return fmt.Errorf("%s refuses its arguments %q: %v", cmd.CommandPath(), fs.Args(), err)
		}
	}
	return nil
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

// docRefusedExamples are command lines the documentation quotes as ones volctl refuses, each
// with where: they must stay refused.
var docRefusedExamples = map[string]string{
	"volctl create db.hcl -t {{.id}}": "docs/json.md: -t reading a field of a list is refused as the flag is read",
}

// TestDocCommandsParse holds the documentation to the command tree as TestHelpExamplesParse
// holds the help: every volctl command line the README, BENCHMARKS.md and docs/*.md quote, in
// a code span or a sh block (a unit's ExecStart= too), names a command volctl has, with flags
// it takes. A synopsis's brackets and "..." are read as the flags and arguments they stand
// for; arguments are not counted, since prose names a command without them (`volctl
// validate`). A command renamed, a flag dropped, leaves a reader copying a line volctl
// refuses (exit 2).
func TestDocCommandsParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	span := regexp.MustCompile("``? ?([^`]+?) ?``?")
	refused := map[string]bool{}
	checked := 0
	for _, path := range append(files, "../../README.md", "../../BENCHMARKS.md") {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fence := "" // the info string of the fenced block we are in, "" outside one
		in := false
		for i, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "```") {
				in, fence = !in, strings.TrimPrefix(line, "```")
				continue
			}
			var frags []string
			switch {
			case in && (fence == "sh" || fence == "ini"):
				frags = []string{strings.TrimPrefix(line, "ExecStart=")}
			case !in:
				for _, m := range span.FindAllStringSubmatch(line, -1) {
					frags = append(frags, m[1])
				}
			}
			for _, frag := range frags {
				for _, words := range exampleCommands(frag) {
					words = synopsisWords(words)
					example := strings.Join(words, " ")
					if docQuotedOutput[example] != "" {
						continue
					}
					checked++
					err := exampleRefused(words, false)
					if why, ok := docRefusedExamples[example]; ok {
						refused[example] = true
						if err == nil {
							t.Errorf("%s:%d: %q is taken, where %s", path, i+1, example, why)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s:%d: %q: %v", path, i+1, example, err)
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("the documentation quotes %d volctl command lines: the patterns no longer find them", checked)
	}
	for example, why := range docRefusedExamples {
		if !refused[example] {
			t.Errorf("%q is no longer quoted (%s): drop it from docRefusedExamples", example, why)
		}
	}
}

// synopsisWords is a command line of a synopsis as a line a user would type: brackets
// around optional flags taken off, "..." (more of the same) and a redirection left out, and a
// flag's value written as a placeholder (--max-volumes K) given one every kind of flag takes.
func synopsisWords(words []string) []string {
	var out []string
	for _, w := range words {
		w = strings.Trim(w, "[]")
		if w == "" || w == "..." || strings.HasPrefix(strings.TrimLeft(w, "0123456789"), ">") {
			continue
		}
		if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "-") && !strings.Contains(out[n-1], "=") && placeholder.MatchString(w) {
			w = "1"
		}
		out = append(out, strings.TrimSuffix(w, "..."))
	}
	return out
}

// placeholder is a synopsis's word for a value: K, FILE, HOST:PORT.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z_:]*$`)

// docQuotedOutput are volctl's own words the documentation quotes, which read as a command
// line: what they are.
var docQuotedOutput = map[string]string{
	"volctl looked in state dir": "a not-found error's text (docs/troubleshooting.md)",
}

// TestMessageCommandsParse holds the advice volctl's messages give to the command tree: every
// volctl command line a string of its code quotes in a code span (`volctl reconcile`), and
// every one it builds with shellquote.Command or CommandFlags, names a command volctl has,
// with flags it takes. An error that tells the user to run a command that was renamed leaves
// them with a refusal (exit 2) where it promised the way out. Arguments are not counted: a
// message's are filled in as it is made.
func TestMessageCommandsParse(t *testing.T) {
	verb := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
	checked := map[string]bool{}
	check := func(pos token.Position, line string) {
		for _, words := range exampleCommands(verb.ReplaceAllString(line, "X")) {
			checked[strings.Join(words, " ")] = true
			if err := exampleRefused(synopsisWords(words), false); err != nil {
				t.Errorf("%s: %q: %v", pos, strings.Join(words, " "), err)
			}
		}
	}
	err := filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == "testdata" {
			if err == nil {
				err = filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, _ := n.Fun.(*ast.SelectorExpr)
				if sel == nil || len(n.Args) == 0 || (sel.Sel.Name != "Command" && sel.Sel.Name != "CommandFlags") {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				lit, _ := n.Args[0].(*ast.BasicLit)
				if pkg == nil || pkg.Name != "shellquote" || lit == nil {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil {
					check(fset.Position(lit.Pos()), s)
				}
			case *ast.BasicLit:
				s, err := strconv.Unquote(n.Value)
				if n.Kind != token.STRING || err != nil || n.Value[0] == '`' {
					return true
				}
				for line := range strings.SplitSeq(s, "\n") {
					for i, part := range strings.Split(line, "`") {
						if i%2 == 1 {
							check(fset.Position(n.Pos()), part)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(checked) < 25 {
		t.Fatalf("volctl's messages quote %d volctl command lines: the patterns no longer find them", len(checked))
	}
}
