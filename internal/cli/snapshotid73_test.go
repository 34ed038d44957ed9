package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestSnapshotCommandsFollowTheirAdviceForAWordNamingTwo: `snapshot delete` and `snapshot
// deregister` of a word that is one snapshot's ID and another's NAME are refused, naming a
// command with --id; that command, run as printed (with --yes), deletes or forgets the
// snapshot of that ID alone (engine's
// TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused).
func TestSnapshotCommandsFollowTheirAdviceForAWordNamingTwo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.SnapshotIDPrefix = "snap-"
	mem := csitest.NewMemPlugin(cfg)
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	h := &cliHarness{ctx: ctx, state: filepath.Join(t.TempDir(), "state"), mem: mem}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	createSingleWriter(t, h.e, "db")
	for _, verb := range []string{"delete", "deregister"} {
		// NAME "snap-b" (ID "snap-snap-b") and NAME "b" (ID "snap-b").
		for _, name := range []string{"snap-b", "b"} {
			if _, err := h.e.CreateSnapshot(ctx, "db", name, nil); err != nil {
				t.Fatal(err)
			}
		}
		code, _, errOut := h.runReported("volume", "snapshot", verb, "mem", "snap-b", "--yes")
		advice := "volctl volume snapshot " + verb + " mem snap-b --id"
		if code == 0 || !strings.Contains(errOut, advice) {
			t.Fatalf("snapshot %s mem snap-b: exit %d, stderr %q; want it refused, advising %q", verb, code, errOut, advice)
		}
		args := append(strings.Fields(strings.TrimPrefix(advice, "volctl ")), "--yes")
		if code, out, errOut := h.runReported(args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", advice, code, out, errOut)
		}
		recs, err := h.e.RecordedSnapshots(ctx, "mem")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].ID != "snap-snap-b" {
			t.Fatalf("after %s: volctl records %+v; want only snap-snap-b", advice, recs)
		}
		if _, err := h.e.DeregisterSnapshot(ctx, "mem", "snap-snap-b"); err != nil {
			t.Fatal(err)
		}
		mem.DropSnapshot("snap-snap-b")
		mem.DropSnapshot("snap-b")
	}
}
