package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
)

// Destructive commands ask on a terminal and need --yes otherwise: off a terminal they exit 2
// without opening the state, "no" exits 3, "yes" goes on (here to "not found", exit 1).
func TestDestructiveCommandsConfirm(t *testing.T) {
	commands := []struct {
		name     string
		new      func(*Factory) *cobra.Command
		args     []string
		question string
	}{
		{"volume deregister", func(f *Factory) *cobra.Command { return newCmdVolumeDeregister(f, nil) }, []string{"db"}, `Deregister volume "db"? [y/N] `},
		{"volume deregister --force", func(f *Factory) *cobra.Command { return newCmdVolumeDeregister(f, nil) }, []string{"db", "--force"}, `Deregister volume "db", release its claims and detach it (forgetting the attachment if its plugin cannot detach it)? [y/N] `},
		{"volume delete", func(f *Factory) *cobra.Command { return newCmdVolumeDelete(f, nil) }, []string{"db"}, `Delete volume "db" and its data? [y/N] `},
		{"volume detach", func(f *Factory) *cobra.Command { return newCmdVolumeDetach(f, nil) }, []string{"db"}, `Release every claim on volume "db"? [y/N] `},
		{"volume detach --force", func(f *Factory) *cobra.Command { return newCmdVolumeDetach(f, nil) }, []string{"db", "--force"}, `Force-detach volume "db" without its plugin's node service? [y/N] `},
		{"plugin deregister --force", func(f *Factory) *cobra.Command { return newCmdPluginDeregister(f, nil) }, []string{"hp", "--force"}, `Deregister plugin "hp" even if volumes use it? [y/N] `},
		{"volume snapshot delete", func(f *Factory) *cobra.Command { return newCmdVolumeSnapshotDelete(f, nil) }, []string{"hp", "snap-1"}, `Delete snapshot "snap-1" of plugin "hp"? [y/N] `},
	}
	answers := []struct {
		name     string
		tty      bool
		input    string
		extra    []string
		wantExit int
		opened   bool // whether the state was opened (the action went ahead)
	}{
		{name: "off a terminal", wantExit: ExitUsage},
		{name: "off a terminal with --yes", extra: []string{"--yes"}, wantExit: ExitError, opened: true},
		{name: "no", tty: true, input: "n\n", wantExit: ExitDeclined},
		{name: "no answer", tty: true, input: "", wantExit: ExitDeclined},
		{name: "yes", tty: true, input: "y\n", wantExit: ExitError, opened: true},
	}
	for _, c := range commands {
		for _, a := range answers {
			t.Run(c.name+"/"+a.name, func(t *testing.T) {
				ios, in, _, errOut := iostreams.Test()
				ios.SetTTY(a.tty, a.tty, a.tty)
				in.WriteString(a.input)
				f := NewFactory(ios)
				f.stateDirFlag = filepath.Join(t.TempDir(), "state")
				defer f.Close()
				err := runCmd(t, c.new(f), append(c.args, a.extra...)...)
				if got := ExitCode(err); got != a.wantExit {
					t.Fatalf("exit %d (%v), want %d", got, err, a.wantExit)
				}
				if a.tty && !strings.Contains(errOut.String(), c.question) {
					t.Errorf("stderr = %q, want the question %q", errOut, c.question)
				}
				_, statErr := os.Stat(filepath.Join(f.stateDirFlag, "volctl.db"))
				if opened := statErr == nil; opened != a.opened {
					t.Errorf("state opened = %v, want %v", opened, a.opened)
				}
			})
		}
	}
}

// plugin deregister without --force is not destructive: it does not ask.
func TestPluginDeregisterWithoutForceDoesNotAsk(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	ios.SetTTY(true, true, true)
	f := NewFactory(ios)
	f.stateDirFlag = t.TempDir()
	defer f.Close()
	err := runCmd(t, newCmdPluginDeregister(f, nil), "hp")
	if ExitCode(err) != ExitError || !strings.Contains(err.Error(), `deregister plugin "hp": not registered`) {
		t.Fatalf("err = %v (exit %d)", err, ExitCode(err))
	}
	if errOut.Len() != 0 {
		t.Errorf("it asked: %q", errOut)
	}
}
