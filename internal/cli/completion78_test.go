package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/testproc"
)

// completeBounded runs cobra's __complete as a shell's script does, with bound in place of the
// product's completion timeout, and returns what it printed and how long it took.
func completeBounded(t *testing.T, bound time.Duration, stateDir string, args ...string) (string, time.Duration) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	f := NewFactory(ios)
	defer f.Close()
	f.completionTimeout = bound
	argv := append([]string{cobra.ShellCompRequestCmd, "--state-dir", stateDir}, args...)
	root := NewRootCmdFor(f, argv) // as main builds it for os.Args[1:]
	root.SetArgs(argv)
	start := time.Now()
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %q: %v", args, err)
	}
	return out.String(), time.Since(start)
}

// TestCompletionReadsWhileAnotherVolctlMigrates: while another volctl holds the state's
// migration lock (a newer volctl migrating the database, or one stopped mid-way), `volume
// status` reads the last committed state at once (ForReading, TestStatusReadsWhileAnotherVolctlMigrates),
// but a <Tab> opens the store for writing (Factory.existingEngine: engine.Config without
// Reading), waits on the lock for the whole of its bound (2 s in the product: each <Tab> freezes
// the shell), then offers nothing. Completion only reads: it must open the state as reading
// commands do and offer the volume at once. Found by helper review78 (completion).
func TestCompletionReadsWhileAnotherVolctlMigrates(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	lock, err := os.OpenFile(filepath.Join(h.state, store.FileName)+"-lock", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	h.e.Close()                     // the harness's own engine holds the lock shared
	testproc.LockExclusive(t, lock) // as a volctl migrating the database holds it
	// The precondition: a reading command reads the state meanwhile.
	if code, out, errOut := h.runReported("volume", "status", "--jq", ".[].id"); code != ExitOK || strings.TrimSpace(out) != "db" {
		t.Fatalf("volume status while another volctl migrates: exit %d, stdout %q, stderr %q; want db", code, out, errOut)
	}
	// A bound far above what an open and two reads take, and below the store's 30 s busy timeout.
	out, took := completeBounded(t, 8*time.Second, h.state, "volume", "status", "")
	if !strings.Contains(out, "db\t") {
		t.Errorf("__complete volume status \"\" while another volctl migrates: %q after %v; want volume db offered at once, as volume status reads it (completion waited on the migration lock, as a writer does)", out, took.Round(time.Millisecond))
	}
}

// TestCompletionOffersNoSnapshotIDTheCommandTakesForAFlag: a plugin's snapshot ID is the
// plugin's bytes, and nothing refuses one beginning with "-" (csi's unusableID refuses controls
// and length only). Completion offers it after `volume snapshot delete PLUGIN`, and the line the
// shell then holds, `volctl volume snapshot delete mem -rf`, is refused, exit 2, "unknown
// shorthand flag: 'r' in -rf", with no word of `--`: a candidate the command cannot take as
// offered. A candidate beginning with "-" must not be offered (as one holding a tab is not,
// completionLine); typed after "--", the command takes it. Found by helper review78
// (completion).
func TestCompletionOffersNoSnapshotIDTheCommandTakesForAFlag(t *testing.T) {
	h := newCLIHarness(t)
	db := h.createVolume(t, "db", spec.SingleNodeWriter)
	h.e.Close()
	ctx := context.Background()
	st, err := store.Open(ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	// Recorded as a plugin's CreateSnapshot answer is.
	err = st.Update(ctx, func(tx *store.Tx) error {
		for _, id := range []string{"-rf", "snap-1"} {
			if err := tx.Snapshots().Put(&store.Snapshot{PluginID: "mem", SnapshotID: id, Name: "nightly " + id,
				SourceVolumeID: "db", SourceExternalID: db.ExternalID, ReadyToUse: true}); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	out, _ := completeBounded(t, time.Hour, h.state, "volume", "snapshot", "delete", "mem", "")
	var offered []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") {
			continue
		}
		id, _, _ := strings.Cut(line, "\t")
		offered = append(offered, id)
		if code, _, errOut := h.runReported("volume", "snapshot", "delete", "mem", id, "--yes"); code != ExitOK {
			t.Errorf("__complete volume snapshot delete mem \"\" offers %q, and `volctl volume snapshot delete mem %s --yes` then exits %d: %s", id, id, code, strings.TrimSpace(errOut))
		}
	}
	if len(offered) != 1 || offered[0] != "snap-1" {
		t.Errorf("__complete volume snapshot delete mem \"\" offers %q; want snap-1 alone (the one the command takes as offered)", offered)
	}
	// The one left out is still reachable, typed after --.
	if code, _, errOut := h.runReported("volume", "snapshot", "delete", "mem", "--yes", "--", "-rf"); code != ExitOK {
		t.Errorf("`volctl volume snapshot delete mem --yes -- -rf`: exit %d: %s", code, strings.TrimSpace(errOut))
	}
}
