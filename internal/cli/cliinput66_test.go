package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestServeRootOrSocketWithAnUnexpandedTildeOrBlankIsRefused: `plugin serve hostpath
// --root=~/vols` (quoted, after "=", or in an agent plugin block's args, where no shell expands
// "~") and `--root " /srv/vols"` (a blank copied along) were taken as paths relative to the
// working directory: the plugin made `./~/vols` or `./ /srv/vols` there and kept every volume's
// data in it, a store the next start from another directory does not see. `--socket=~/hp.sock`
// likewise served on `./~/hp.sock`. The state dir refuses exactly these (exit 2,
// TestStateDirWithAnUnexpandedTildeIsRefused, TestStateDirWithBlanksOrControlsIsRefused), and
// --socket refuses a blank; the plugin's root, which holds the volumes themselves, must too.
// Found by helper review66.
func TestServeRootOrSocketWithAnUnexpandedTildeOrBlankIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name         string
		root, socket string // "" socket: one under the test's dir
	}{
		{name: "root with ~", root: "~/vols"},
		{name: "root with a blank before it", root: " /srv/vols"},
		{name: "root with a blank after it", root: "vols "},
		{name: "socket with ~", root: "root", socket: "~/hp.sock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			t.Chdir(cwd)
			socket := tt.socket
			if socket == "" {
				socket = filepath.Join(t.TempDir(), "hp.sock")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			go func() { time.Sleep(300 * time.Millisecond); cancel() }() // the current code serves until it ends
			err := pluginServeHostpathRun(ctx, &PluginServeHostpathOptions{Socket: socket, Root: tt.root, NodeID: "n1"})
			entries, _ := os.ReadDir(cwd)
			var made []string
			for _, e := range entries {
				if e.Name() != "root" {
					made = append(made, e.Name())
				}
			}
			if err == nil || ExitCode(err) != ExitUsage || len(made) > 0 {
				t.Errorf("plugin serve hostpath --root %q --socket %q: err = %v (exit %d), and it made %q in the working directory; want it refused, exit 2, nothing made",
					tt.root, socket, err, ExitCode(err), made)
			}
		})
	}
}

// TestCompletionScriptGivenAnArgumentIsAUsageError: `volctl completion bash extra`
// (or fish x) is a usage error like every other command given an argument it does not take
// (`volctl version extra`, `volctl reconcile extra`: exit 2), but cobra's completion
// subcommands' NoArgs error is no flagError and came out exit 1, which `volctl --help` calls
// a runtime error and a script retries.
// Found by helper review66.
func TestCompletionScriptGivenAnArgumentIsAUsageError(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		_, err := execRoot(t, "completion", shell, "extra")
		if err == nil || ExitCode(err) != ExitUsage {
			t.Errorf("volctl completion %s extra: err = %v, exit %d; want exit %d (usage)", shell, err, ExitCode(err), ExitUsage)
		}
	}
}

// TestExpandLimitZeroIsNotTakenForNoLimit: `volume expand v --size 3GiB --limit 0` of
// a volume whose capacity_max is 2GiB was refused "3GiB is above its capacity_max 2GiB; pass
// --limit to raise it": --limit was passed, and read as 0 it was taken for the flag not given
// (VolumeExpandOptions.Limit: "empty keeps the volume's"; 0 is not empty). The advice asks
// for what the user did. A --limit of 0 (or one that rounds to 0 bytes, "0.5B") is either
// refused naming --limit, or taken as asked; never silently dropped with advice to give it.
// Found by helper review66.
func TestExpandLimitZeroIsNotTakenForNoLimit(t *testing.T) {
	ctx := context.Background()
	e := volumeVOfCapacity(t, "1GiB", "2GiB")
	for _, limit := range []string{"0", "0.5B"} {
		code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "3GiB", "--limit", limit)
		if code != ExitOK && code != ExitUsage || strings.Contains(errOut, "pass --limit to raise it") {
			t.Errorf("volume expand v --size 3GiB --limit %s: exit %d: %s; want --limit %s refused by name (exit 2) or taken, not advice to pass the --limit given", limit, code, errOut, limit)
		}
	}
}

// TestRelativeHomeIsNotTakenFromTheWorkingDirectory: docs/architecture.md (Command
// line) ignores a relative $XDG_STATE_HOME rather than take it from the working directory, "that
// would give each directory volctl runs in a state of its own". A relative $HOME (HOME=.,
// HOME=home in a service's or container's environment) went through unchecked: the state dir
// was ./.local/state/volctl under whatever directory volctl ran in, made there silently, a
// claim recorded in one directory free in the next. It is refused (or ignored), not resolved
// against the working directory.
// Found by helper review66.
func TestRelativeHomeIsNotTakenFromTheWorkingDirectory(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, home := range []string{".", "home/u"} {
		ios, _, _, _ := iostreams.Test()
		f := NewFactory(ios)
		f.geteuid = func() int { return 1000 }
		f.lookupEnv = func(k string) (string, bool) {
			if k == "HOME" {
				return home, true
			}
			return "", false
		}
		got, err := f.StateDir()
		if err == nil && strings.HasPrefix(got, cwd) {
			t.Errorf("HOME=%q: state dir %q, under the working directory %s; want a relative $HOME refused, as a relative $XDG_STATE_HOME is not taken from it", home, got, cwd)
		}
	}
}
