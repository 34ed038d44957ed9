package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// replaceStateFile puts a copy of the state database at its path, as a backup restored over
// it is: the engine opened before holds the old file, and refuses to write (store.ErrReplaced).
func replaceStateFile(t *testing.T, state string) {
	t.Helper()
	path := filepath.Join(state, store.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".restored"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileThatFailedWhoseFilterFailsStillSaysItFailed: `volctl reconcile --jq FILTER`
// whose pass fails before it looks at anything (here the state database replaced under it,
// a backup restored: the engine refuses to write, "restart this volctl") and whose filter then
// fails on the report. reconcileRun returns the printing error alone: stderr says
// "reconcile: 0 action(s) done, 0 problem(s) left; only printing it failed: --jq ...", which
// reads as a clean pass with nothing to do, and the exit is 2 (a pass that did nothing whose
// filter failed, "nothing was done"), while the pass never ran: the engine's error, which the
// same command without --jq prints with exit 1, is dropped. Correct: the reconcile's own error
// is said whatever the filter does (as group run joins its run error with the unprinted
// result, joinUnprinted), and the exit is the failure's, 1.
// Found by helper review80 (cliinput).
func TestReconcileThatFailedWhoseFilterFailsStillSaysItFailed(t *testing.T) {
	h := newCLIHarness(t)
	replaceStateFile(t, h.state)
	run := func(args ...string) (int, string) {
		ios, _, _, errOut := iostreams.Test()
		f := NewFactory(ios)
		f.engine = h.e // the process that opened the state before it was replaced
		inStateDir(f, h.state)
		root := NewRootCmd(f)
		root.SetArgs(args)
		ctx := context.Background()
		return f.Report(f.RedactError(ctx, root.ExecuteContext(ctx))), errOut.String()
	}
	// The precondition: without a filter, the pass fails, exit 1, saying why.
	code, stderr := run("reconcile", "--json")
	if code != ExitError || !strings.Contains(stderr, "restart this volctl") {
		t.Fatalf("precondition: reconcile --json on a replaced state database: exit %d, stderr %q; want exit 1 saying the database was replaced", code, stderr)
	}
	code, stderr = run("reconcile", "--jq", `error("boom")`)
	if !strings.Contains(stderr, "restart this volctl") || code != ExitError {
		t.Errorf("reconcile --jq 'error(\"boom\")' on a replaced state database: exit %d, stderr %q; want exit 1 and the pass's own error (the state database replaced, restart this volctl), not only that printing failed", code, stderr)
	}
}

// TestClaimFlagValueThatIsAFlagIsRefused: `volctl volume claim db --alloc web-0 --fs-type
// "$FS" --read-only` with $FS unset, unquoted (or a value simply left out), is `--fs-type
// --read-only`: pflag takes "--read-only" as the fs type, and the claim is made for writing,
// with the fs type "--read-only" sent to the plugin, exit 0: the alloc gets a writable mount
// and holds the volume's writer slot (refusing every other writer of a single-writer volume)
// where a read-only claim was asked. --mount-flag takes the next flag the same way. No file
// system type begins with "-", nor does a mount flag (mount(8)'s -o options are words):
// as the state dir, the path flags and every ID flag refuse a value that is the next flag
// (TestPathFlagThatIsAFlagIsRefused, TestIDFilterThatIsAFlagIsRefused), --fs-type and
// --mount-flag must: exit 2 naming the flag, no claim made.
// Found by helper review80 (cliinput).
func TestClaimFlagValueThatIsAFlagIsRefused(t *testing.T) {
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("precondition: the harness's plugin cannot mount here (%v), and a claim needs a mount", err)
	}
	for _, flag := range []string{"--fs-type", "--mount-flag"} {
		t.Run(flag, func(t *testing.T) {
			h := newCLIHarness(t)
			h.createVolume(t, "db", spec.SingleNodeWriter)
			args := []string{"volume", "claim", "db", "--alloc", "web-0", flag, "--read-only"}
			code, out, errOut := h.runReported(args...)
			t.Cleanup(func() {
				if code == ExitOK {
					h.e.Release(h.ctx, "db", "web-0") // the claim the test made: unmounted
				}
			})
			claims, err := h.e.Claims(h.ctx)
			if err != nil {
				t.Fatal(err)
			}
			var made []string
			for _, c := range claims {
				made = append(made, c.Alloc+" ("+c.Mode+")")
			}
			if code != ExitUsage || !strings.Contains(errOut, flag) || len(made) > 0 {
				t.Errorf("volctl %s: exit %d, stdout %q, stderr %q, claims made %q; want exit 2 naming %s (its value left out, --read-only taken for it), no claim made",
					strings.Join(args, " "), code, out, errOut, made, flag)
			}
		})
	}
}
