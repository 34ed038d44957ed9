package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/tui"
)

// TestShorthandTypoIsNotAnsweredWithAnUnrelatedFlag: a one-letter shorthand volctl does not
// have, as users type it from other tools (-a for the alloc, -s for the size, -f for force, -g
// for a group), got a "Did you mean this?" naming a flag that has nothing to do with it:
// flagSuggestions takes every flag within Levenshtein distance 2 of the typed name, and every
// flag of one or two letters (--jq, --id, --arg) is within 2 of any one letter. `volume claim
// db -a web-0` was answered "Did you mean this? --jq", `volume expand db -s 2G` the same, and
// `export nomad --all -g web` "--arg", which, followed, runs and writes the jobs with the task
// argument "web" instead of exporting group web, exit 0. So did the two-letter `--ro` (--jq).
// A suggestion is a flag the typed one could be: for a single letter, one that begins with it
// (--alloc, --size, --group); never one that shares no letter with it. No suggestion at all is
// better than a wrong one.
// Found by helper review75.
func TestShorthandTypoIsNotAnsweredWithAnUnrelatedFlag(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	for _, tt := range []struct {
		args    []string
		notSaid string // the unrelated flag suggested
		want    string // the flag meant, when there is one ("" when only notSaid is checked)
	}{
		{[]string{"volume", "claim", "db", "-a", "web-0"}, "--jq", "--alloc"},
		{[]string{"volume", "release", "db", "-a", "web-0"}, "--jq", "--alloc"},
		{[]string{"volume", "expand", "db", "-s", "2GiB"}, "--jq", "--size"},
		{[]string{"volume", "detach", "db", "-f"}, "--jq", "--force"},
		{[]string{"events", "-p", "mem"}, "--jq", "--plugin"},
		{[]string{"export", "nomad", "--all", "-g", "web"}, "--arg", "--group"},
		{[]string{"volume", "claim", "db", "--alloc", "web-0", "--ro"}, "--jq", ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := execRoot(t, tt.args...)
			if err == nil || ExitCode(err) != ExitUsage {
				t.Fatalf("err = %v (exit %d), want the unknown flag refused, exit %d", err, ExitCode(err), ExitUsage)
			}
			_, hint, _ := strings.Cut(err.Error(), "Did you mean this?")
			hint, _, _ = strings.Cut(hint, "\nSee '")
			if strings.Contains(hint, tt.notSaid+"\n") || strings.HasSuffix(hint, tt.notSaid) {
				t.Errorf("suggested %s, a flag the typed one cannot be:\n%v", tt.notSaid, err)
			}
			if tt.want != "" && !strings.Contains(hint, tt.want) {
				t.Errorf("did not suggest %s, the flag the typed one begins:\n%v", tt.want, err)
			}
		})
	}
}

// TestPathFlagThatIsAFlagIsRefused: a flag taking a path, given no value before another flag,
// took that flag as the path, and the flag meant was lost, exit 0:
//   - `volctl tui --log-file --readonly` created a log file named "--readonly" in the working
//     directory and ran the dashboard with release, detach, delete and reconcile on: the
//     read-only view asked for was not given, and nothing said so;
//   - `volctl plugin serve hostpath ... --root --enable-attach` served with its volumes' data
//     in ./--enable-attach and without ControllerPublishVolume, saying "root --enable-attach";
//   - `volctl export nomad --all -o --include-secrets` wrote the jobs, secrets left out, into
//     ./--include-secrets.
//
// The state dir (TestStateDirThatIsAFlagIsRefused) and every ID flag
// (TestIDFilterThatIsAFlagIsRefused) refuse a value beginning with "-" for this reason; these
// paths must too: exit 2 naming the flag, nothing made in the working directory (./-x names
// such a path, as the state dir's refusal says).
// Found by helper review75.
func TestPathFlagThatIsAFlagIsRefused(t *testing.T) {
	t.Run("tui --log-file --readonly", func(t *testing.T) {
		cwd := t.TempDir()
		t.Chdir(cwd)
		opts, err := parseOptions(t, newCmdTUI, "--log-file", "--readonly")
		if err == nil {
			// Parsed: run it as the command would, on a terminal, the dashboard replaced.
			ios, _, _, _ := iostreams.Test()
			ios.SetTTY(true, true, true)
			opts.IO = ios
			state := t.TempDir()
			var readOnly *bool
			opts.StateDir = func() (string, error) { return state, nil }
			opts.Run = func(_ context.Context, _ io.Reader, _ io.Writer, o tui.Options) error {
				readOnly = &o.ReadOnly
				return nil
			}
			err = tuiRun(context.Background(), &opts)
			if readOnly != nil && !*readOnly {
				t.Errorf("the dashboard ran with read-only off, its log in %q", opts.LogFile)
			}
		}
		made := madeIn(t, cwd)
		if ExitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), "--log-file") || len(made) > 0 {
			t.Errorf("volctl tui --log-file --readonly: err = %v (exit %d), made in the working directory %q; want exit 2 naming --log-file, nothing made",
				err, ExitCode(err), made)
		}
	})

	t.Run("plugin serve hostpath --root --enable-attach", func(t *testing.T) {
		cwd := t.TempDir()
		t.Chdir(cwd)
		socket := filepath.Join(t.TempDir(), "hp.sock")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		go func() { time.Sleep(300 * time.Millisecond); cancel() }() // the current code serves until it ends
		ios, _, _, errOut := iostreams.Test()
		root := NewRootCmd(NewFactory(ios))
		root.SetArgs([]string{"plugin", "serve", "hostpath", "--socket", socket, "--node-id", "n1", "--root", "--enable-attach"})
		err := root.ExecuteContext(ctx)
		made := madeIn(t, cwd)
		if ExitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), "--root") || len(made) > 0 {
			t.Errorf("plugin serve hostpath --root --enable-attach: err = %v (exit %d), stderr %q, made in the working directory %q; want exit 2 naming --root, nothing made",
				err, ExitCode(err), errOut.String(), made)
		}
	})

	t.Run("export nomad -o --include-secrets", func(t *testing.T) {
		h := newCLIHarness(t)
		h.createVolume(t, "db", spec.SingleNodeWriter)
		cwd := t.TempDir()
		t.Chdir(cwd)
		code, out, errOut := runOnOut(h.ctx, h.e, "export", "nomad", "--all", "-o", "--include-secrets")
		made := madeIn(t, cwd)
		if code != ExitUsage || !strings.Contains(errOut, "--out") || len(made) > 0 {
			t.Errorf("export nomad --all -o --include-secrets: exit %d, stdout %q, stderr %q, made in the working directory %q; want exit 2 naming --out, nothing made",
				code, out, errOut, made)
		}
	})
}

// madeIn lists what is in dir.
func madeIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
