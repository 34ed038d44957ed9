package cli

import (
	"github.com/spf13/cobra"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// complete runs cobra's hidden __complete command as a shell's completion script does and
// returns the candidates (descriptions cut off) and the directive line.
func complete(t *testing.T, stateDir string, args ...string) (ids []string, directive string) {
	t.Helper()
	return completeBy(t, cobra.ShellCompRequestCmd, stateDir, args...)
}

// completeBy is complete sent as request, cobra's __complete or, as the scripts of `volctl
// completion SHELL --no-descriptions` send it, __completeNoDesc.
func completeBy(t *testing.T, request, stateDir string, args ...string) (ids []string, directive string) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	f := NewFactory(ios)
	defer f.Close()
	// Not the product's 2 s: opening the state and reading it on a machine starved by other
	// work (a parallel go test, the race detector) may take longer, and completion then
	// offers nothing, which reads as a wrong answer. go test's -timeout bounds a hang.
	f.completionTimeout = time.Hour
	argv := append([]string{request, "--state-dir", stateDir}, args...)
	root := NewRootCmdFor(f, argv) // as main builds it for os.Args[1:]
	root.SetArgs(argv)
	if err := root.Execute(); err != nil {
		t.Fatalf("%s %q: %v", request, args, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(line, ":") {
			directive = line
			continue
		}
		id, _, _ := strings.Cut(line, "\t")
		ids = append(ids, id)
	}
	return ids, directive
}

// noFiles is the directive ShellCompDirectiveNoFileComp: the shell offers no file names.
const noFiles = ":4"

// Shell completion offers volume, plugin, group, alloc and snapshot IDs from the state, the
// modes and --for's verbs, and never file names where an ID belongs.
func TestCompletion(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	h.createVolume(t, "cache", spec.MultiNodeMultiWriter)
	h.claim(t, "db", "web-0")
	h.claim(t, "cache", "batch-1")
	snap, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.runGroupOn(t, "cache")
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"volume", "claim", ""}, []string{"cache", "db"}},
		{[]string{"volume", "status", "d"}, []string{"db"}},
		{[]string{"status", ""}, []string{"cache", "db"}},
		{[]string{"volume", "delete", ""}, []string{"cache", "db"}},
		{[]string{"volume", "claim", "db", ""}, nil}, // one volume only
		{[]string{"volume", "release", "db", "--alloc", ""}, []string{"web-0"}},
		{[]string{"volume", "release", "cache", "--alloc", ""}, []string{"api[0]", "batch-1"}},
		{[]string{"volume", "claim", "db", "--access-mode", "multi-node-"},
			[]string{"multi-node-reader-only", "multi-node-single-writer", "multi-node-multi-writer"}},
		{[]string{"volume", "claim", "db", "--attachment-mode", ""}, []string{"file-system", "block-device"}},
		{[]string{"validate", "--for", ""}, []string{"register", "create"}},
		{[]string{"plugin", "deregister", ""}, []string{"mem"}},
		{[]string{"volume", "snapshot", "list", "--plugin", ""}, []string{"mem"}},
		{[]string{"volume", "snapshot", "delete", "mem", ""}, []string{snap.ID}},
		{[]string{"volume", "snapshot", "delete", "nope", ""}, nil},
		{[]string{"group", "stop", ""}, []string{"api"}},
		{[]string{"reconcile", ""}, nil},
		{[]string{"version", ""}, nil},
	} {
		ids, directive := complete(t, h.state, tt.args...)
		if strings.Join(ids, " ") != strings.Join(tt.want, " ") || directive != noFiles {
			t.Errorf("complete %q = %q %s, want %q %s", tt.args, ids, directive, tt.want, noFiles)
		}
	}
	// Where files belong, the shell's file completion stays.
	if _, directive := complete(t, h.state, "volume", "create", ""); directive == noFiles {
		t.Errorf("volume create FILE: directive %s turns file names off", directive)
	}
}

// Completing with no state yet completes nothing, says nothing, and creates no state dir.
func TestCompletionWithoutStateCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	ids, directive := complete(t, dir, "volume", "claim", "")
	if len(ids) != 0 || directive != noFiles {
		t.Errorf("complete without state = %q %s, want nothing and %s", ids, directive, noFiles)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("completion made the state dir %s: %v", dir, err)
	}
}

// The filter flags of events and export nomad take IDs too: they complete them, and never offer
// file names; events --kind offers the kinds in the log, agent --log-format its two formats.
func TestCompletionOfFilterFlags(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	h.claim(t, "db", "web-0")
	h.runGroupOn(t, "db")
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"events", "--volume", ""}, []string{"db"}},
		{[]string{"events", "--plugin", ""}, []string{"mem"}},
		{[]string{"events", "--alloc", ""}, []string{"api[0]", "web-0"}},
		{[]string{"events", "--kind", "cl"}, []string{"claim"}},
		{[]string{"export", "nomad", "--group", ""}, []string{"api"}},
		{[]string{"agent", "--log-format", ""}, []string{"text", "json"}},
	} {
		ids, directive := complete(t, h.state, tt.args...)
		if strings.Join(ids, " ") != strings.Join(tt.want, " ") || directive != noFiles {
			t.Errorf("complete %q = %q %s, want %q %s", tt.args, ids, directive, tt.want, noFiles)
		}
	}
}

// A plugin deregistered with --force leaves its snapshots recorded and deletable (volume
// snapshot delete PLUGIN SNAPSHOT): completion offers that plugin ID too, and its snapshots.
func TestCompletionOfSnapshotsOfADeregisteredPlugin(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	snap, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"volume", "snapshot", "delete", ""}, []string{"mem"}},
		{[]string{"volume", "snapshot", "delete", "mem", ""}, []string{snap.ID}},
	} {
		ids, directive := complete(t, h.state, tt.args...)
		if strings.Join(ids, " ") != strings.Join(tt.want, " ") || directive != noFiles {
			t.Errorf("complete %q = %q %s, want %q %s", tt.args, ids, directive, tt.want, noFiles)
		}
	}
}
