package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/buildinfo"
	"github.com/volctl/volctl/internal/iostreams"
)

// execRoot runs the whole command tree as main does (root.go's flag error function included)
// and returns stdout and the error.
func execRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// Habits from gh, kubectl and Nomad get a usage error that says what volctl spells instead.
func TestFlagHabitsGetSuggestions(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		suggest []string
	}{
		{[]string{"volume", "status", "-json"}, []string{"--json"}},                     // Nomad, Go
		{[]string{"plugin", "status", "-o", "json"}, []string{"--json", "-t TEMPLATE"}}, // kubectl
		{[]string{"volume", "status", "--output=json"}, []string{"--json", "-t TEMPLATE"}},
		{[]string{"volume", "status", "--jsn"}, []string{"--json"}},
		{[]string{"status", "-state-dir", "/x"}, []string{"--state-dir"}},
		{[]string{"status", "-verbose"}, []string{"--verbose"}},
		{[]string{"volume", "claim", "db", "--alloc", "a", "--acces-mode", "x"}, []string{"--access-mode"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := execRoot(t, tt.args...)
			want := "\n\nDid you mean this?\n\t" + strings.Join(tt.suggest, "\n\t") + "\nSee '"
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v (exit %d), want exit %d and %q", err, ExitCode(err), ExitUsage, want)
			}
		})
	}
	// A flag like nothing volctl has gets no suggestion, only the error.
	_, err := execRoot(t, "volume", "status", "--frobnicate")
	if err == nil || ExitCode(err) != ExitUsage || strings.Contains(err.Error(), "Did you mean") {
		t.Fatalf("err = %v (exit %d), want exit 2 without a suggestion", err, ExitCode(err))
	}
}

// volume, plugin and group list (and ls) are their status commands' listings.
func TestListAliases(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	for _, noun := range []string{"volume", "plugin", "group"} {
		for _, alias := range []string{"list", "ls"} {
			c, _, err := root.Find([]string{noun, alias})
			if err != nil || c.Name() != "status" || c.Parent().Name() != noun {
				t.Errorf("volctl %s %s = %v (%v), want volctl %s status", noun, alias, c.CommandPath(), err, noun)
			}
		}
	}
	_, err := execRoot(t, "volume", "list", "db")
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "to show one: `volctl volume status db`") {
		t.Fatalf("volume list db: err = %v (exit %d)", err, ExitCode(err))
	}
}

// --version prints what `volctl version` prints.
func TestVersionFlag(t *testing.T) {
	out, err := execRoot(t, "--version")
	if err != nil || out != buildinfo.String()+"\n" {
		t.Fatalf("volctl --version = %q, %v; want %q", out, err, buildinfo.String()+"\n")
	}
}

// kubectl's get and describe, docker's inspect, show and info: the status command that shows
// one (or lists) is suggested; volume snapshot list is ls too, as the other listings are.
func TestShowHabitsGetStatus(t *testing.T) {
	for _, noun := range []string{"volume", "plugin", "group"} {
		for _, habit := range []string{"get", "describe", "inspect", "show", "info"} {
			_, err := execRoot(t, noun, habit, "x")
			want := "unknown command \"" + habit + "\" for \"volctl " + noun + "\"\n\nDid you mean this?\n\tstatus\n"
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), want) {
				t.Errorf("volctl %s %s x: err = %v (exit %d), want exit %d and %q", noun, habit, err, ExitCode(err), ExitUsage, want)
			}
		}
	}
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	c, _, err := root.Find([]string{"volume", "snapshot", "ls"})
	if err != nil || c.CommandPath() != "volctl volume snapshot list" {
		t.Errorf("volctl volume snapshot ls = %v (%v), want volctl volume snapshot list", c.CommandPath(), err)
	}
}

// --version prints the version line of when it runs, not one made while the command tree was
// built: every process builds the tree, and reading the build information for a line only
// --version prints cost each of them (`volctl volume claim` included) about 70,000
// instructions (issue 16).
func TestVersionFlagMakesItsLineWhenPrinted(t *testing.T) {
	v, c, d := buildinfo.Version, buildinfo.Commit, buildinfo.Date
	t.Cleanup(func() { buildinfo.Version, buildinfo.Commit, buildinfo.Date = v, c, d })
	buildinfo.Version, buildinfo.Commit, buildinfo.Date = "1.2.3", "0123456789abcdef", "2026-11-30T00:00:00Z"
	ios, _, out, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	buildinfo.Version = "4.5.6"
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "volctl 4.5.6 (0123456789ab, 2026-11-30T00:00:00Z)\n"; got != want {
		t.Fatalf("volctl --version = %q, want %q (the line of when it runs)", got, want)
	}
}
