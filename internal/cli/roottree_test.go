package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
)

// NewRootCmdFor builds only the named top-level command's subtree, and every command run
// through such a tree answers exactly as through the whole one: its help (flags, global
// flags, subcommands), a mistyped subcommand's refusal, a bad flag's. Anything that is not
// a top-level command's name gets the whole tree (help, completion, suggestions).
func TestOneCommandsTreeRunsAsTheWholeOne(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	whole := NewRootCmd(NewFactory(ios))
	var names []string
	for _, c := range whole.Commands() {
		if c.Name() == "completion" || c.Name() == "help" { // cobra's, in every tree
			continue
		}
		names = append(names, c.Name())
		if len(c.Aliases) > 0 {
			t.Errorf("top-level command %q has aliases %q: NewRootCmdFor matches names only", c.Name(), c.Aliases)
		}
	}
	var table []string
	for _, tc := range topCommands {
		table = append(table, tc.name)
	}
	slices.Sort(names)
	slices.Sort(table)
	if !slices.Equal(names, table) {
		t.Fatalf("topCommands names %q, the whole tree has %q", table, names)
	}

	// Every command path, as typed, with the inputs whose answer the tree could change.
	var paths [][]string
	groups := map[string]bool{} // the paths of commands that only group others
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Name() == "completion" || sub.Name() == "help" {
				continue
			}
			p := append(slices.Clone(path), sub.Name())
			paths = append(paths, p)
			groups[strings.Join(p, " ")] = sub.HasSubCommands()
			walk(sub, p)
		}
	}
	walk(whole, nil)
	run := func(root *cobra.Command, args []string) string {
		ios, _, out, errOut := iostreams.Test()
		root.SetIn(ios.In)
		root.SetOut(out)
		root.SetErr(errOut)
		root.SetArgs(args)
		err := root.Execute()
		return fmt.Sprintf("stdout:\n%s\nstderr:\n%s\nerr: %v (exit %d)", out, errOut, err, ExitCode(err))
	}
	for _, p := range paths {
		for _, args := range [][]string{
			append(slices.Clone(p), "--help"),
			append(slices.Clone(p), "--no-such-flag"),
			append(slices.Clone(p), "stauts"),
		} {
			if args[len(args)-1] == "stauts" && !groups[strings.Join(p, " ")] {
				continue // a command's own argument: it would run, and read the store
			}
			iosW, _, _, _ := iostreams.Test()
			want := run(NewRootCmd(NewFactory(iosW)), args)
			iosP, _, _, _ := iostreams.Test()
			one := NewRootCmdFor(NewFactory(iosP), args)
			if n := len(one.Commands()); n != 1 {
				t.Fatalf("NewRootCmdFor(%q) built %d top-level commands, want only %q", args, n, args[0])
			}
			if tableGroup(args[0]) && len(p) > 1 {
				if n := len(one.Commands()[0].Commands()); n != 1 {
					t.Fatalf("NewRootCmdFor(%q) built %d %s subcommands, want only %q", args, n, args[0], args[1])
				}
			}
			if got := run(one, args); got != want {
				t.Errorf("volctl %s through %q's tree:\n%s\nthrough the whole tree:\n%s", strings.Join(args, " "), args[0], got, want)
			}
		}
	}

	// The groups built from a table (makeFor) are built with each of its subcommands, and an
	// alias or a flag where a subcommand's name would be gets the group whole.
	for _, g := range []struct {
		name  string
		table []topCommand
	}{{"volume", volumeCommands}, {"plugin", pluginCommands}} {
		if !tableGroup(g.name) {
			t.Errorf("%s has a table of subcommands but no makeFor", g.name)
		}
		var built, want []string
		for _, c := range whole.Commands() {
			if c.Name() == g.name {
				for _, sub := range c.Commands() {
					built = append(built, sub.Name())
				}
			}
		}
		for _, tc := range g.table {
			want = append(want, tc.name)
		}
		slices.Sort(built)
		slices.Sort(want)
		if !slices.Equal(built, want) {
			t.Errorf("%s's table has %q, the whole tree %q", g.name, want, built)
		}
		for _, args := range [][]string{{g.name, "list"}, {g.name, "ls"}, {g.name, "--help"}, {g.name, "stauts"}} {
			iosP, _, _, _ := iostreams.Test()
			group := NewRootCmdFor(NewFactory(iosP), args).Commands()[0]
			if n := len(group.Commands()); n != len(g.table) {
				t.Errorf("NewRootCmdFor(%q) built %d %s subcommands, want all %d", args, n, g.name, len(g.table))
			}
		}
	}

	for _, args := range [][]string{nil, {"--version"}, {"--state-dir", "/x", "volume", "status"}, {"help", "volume"}, {"completion", "bash"}, {"__complete", "vol"}, {"statsu"}, {"Volume"}} {
		iosP, _, _, _ := iostreams.Test()
		if n, want := len(NewRootCmdFor(NewFactory(iosP), args).Commands()), len(whole.Commands()); n != want {
			t.Errorf("NewRootCmdFor(%q) built %d top-level commands, want the whole tree's %d", args, n, want)
		}
	}
}

// tableGroup says whether the top-level command name is built from a table of its own
// subcommands (topCommand.makeFor).
func tableGroup(name string) bool {
	for _, tc := range topCommands {
		if tc.name == name {
			return tc.makeFor != nil
		}
	}
	return false
}
