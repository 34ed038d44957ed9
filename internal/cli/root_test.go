package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// A mistyped subcommand under a command group exits 2 with a suggestion, as at the top level,
// rather than printing the group's help and exiting 0, which a script would take for success.
// The group alone still prints its help and exits 0.
func TestUnknownSubcommandOfAGroupIsAUsageError(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		suggest string
	}{
		{[]string{"volume", "stauts"}, `unknown command "stauts" for "volctl volume"`, "status"},
		{[]string{"plugin", "stauts", "hp"}, `unknown command "stauts" for "volctl plugin"`, "status"},
		{[]string{"volume", "snapshot", "lst"}, `unknown command "lst" for "volctl volume snapshot"`, "list"},
		{[]string{"group", "bogus"}, `unknown command "bogus" for "volctl group"`, ""},
		{[]string{"plugin", "serve", "hostpth"}, `unknown command "hostpth" for "volctl plugin serve"`, "hostpath"},
		{[]string{"completion", "bsh"}, `unknown command "bsh" for "volctl completion"`, "bash"},
		// The top level is refused by the same code, typed, not recognised by cobra's wording.
		{[]string{"statsu"}, `unknown command "statsu" for "volctl"`, "status"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "volctl"`, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			err := runCmd(t, NewRootCmd(NewFactory(ios)), tt.args...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, ExitCode(err), tt.want, ExitUsage)
			}
			if tt.suggest != "" && !strings.Contains(err.Error(), "Did you mean this?\n\t"+tt.suggest) {
				t.Errorf("err = %v, want the suggestion %q", err, tt.suggest)
			}
		})
	}
	ios, _, out, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	root.SetArgs([]string{"volume"})
	if err := root.Execute(); err != nil {
		t.Fatalf("volctl volume: %v", err)
	}
	if !strings.Contains(out.String(), "Available Commands:") {
		t.Errorf("volctl volume printed %q, want its help", out)
	}
}

// TestHelpOfAnUnknownTopicIsAUsageError: `volctl help TOPIC` that names no command exits 2,
// naming the topic, with suggestions, as `volctl TOPIC` does. The command groups take any
// argument (rejectUnknownSubcommands refuses it when they run), and cobra's help command,
// which finds its topic through them, took `volctl help statsu`, `volctl help volume clam`
// and `volctl help volume claim extra` for the root's, volume's and claim's help: printed
// it and exited 0, nothing said of the topic, a mistyped name passing for a documented one.
func TestHelpOfAnUnknownTopicIsAUsageError(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		suggest string
	}{
		{[]string{"help", "statsu"}, `unknown help topic "statsu": no command "statsu" in volctl`, "status"},
		{[]string{"help", "volume", "clam"}, `unknown help topic "volume clam": no command "clam" in volctl volume`, "claim"},
		{[]string{"help", "volume", "claim", "extra"}, `unknown help topic "volume claim extra": no command "extra" in volctl volume claim`, ""},
		{[]string{"help", "frobnicate"}, `unknown help topic "frobnicate"`, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, out, _ := iostreams.Test()
			root := NewRootCmd(NewFactory(ios))
			root.SetArgs(tt.args)
			err := root.Execute()
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (exit %d), want %q (exit %d); stdout %.80q", err, ExitCode(err), tt.want, ExitUsage, out)
			}
			if tt.suggest != "" && !strings.Contains(err.Error(), "Did you mean this?\n\t"+tt.suggest) {
				t.Errorf("err = %v, want the suggestion %q", err, tt.suggest)
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %.80q, want nothing", out)
			}
		})
	}
	// A topic that names a command still gets its help, exit 0.
	for _, args := range [][]string{{"help"}, {"help", "volume"}, {"help", "volume", "claim"}, {"help", "volume", "snapshot", "list"}} {
		ios, _, out, _ := iostreams.Test()
		root := NewRootCmd(NewFactory(ios))
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("volctl %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(out.String(), "Usage:") {
			t.Errorf("volctl %s printed %.80q, want its help", strings.Join(args, " "), out)
		}
	}
}

// TestWrongArgumentCountShowsTheUsage: a command given too few or too many arguments says
// which it takes, with its usage line (`volctl volume claim VOLUME --alloc ALLOC`), not only
// cobra's count: "accepts 1 arg(s), received 0" named no argument, and a newcomer who typed
// `volctl group run` or `volctl volume snapshot delete nightly` had to open the help to learn
// that a FILE, or the plugin before the snapshot, was wanted.
func TestWrongArgumentCountShowsTheUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"volume", "claim", "--alloc", "web-0"}, "Usage: volctl volume claim VOLUME --alloc ALLOC"},
		{[]string{"volume", "claim", "a", "b", "--alloc", "web-0"}, "Usage: volctl volume claim VOLUME --alloc ALLOC"},
		{[]string{"group", "run"}, "Usage: volctl group run FILE | -"},
		{[]string{"volume", "snapshot", "delete", "nightly"}, "Usage: volctl volume snapshot delete PLUGIN SNAPSHOT_ID|NAME"},
		{[]string{"validate"}, "Usage: volctl validate [--for register|create] FILE... | -"},
		{[]string{"plugin", "status", "a", "b"}, "Usage: volctl plugin status [ID]"},
		{[]string{"volume", "claim", "", "--alloc", "web-0"}, "Usage: volctl volume claim VOLUME --alloc ALLOC"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			err := runCmd(t, NewRootCmd(NewFactory(ios)), tt.args...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, ExitCode(err), tt.want, ExitUsage)
			}
		})
	}
}
