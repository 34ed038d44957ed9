package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a plugin that answers a detach's check (ControllerGetVolume) about another
// volume, whose ID is a megabyte long and which it says is published to 200,000 nodes. The
// warning that the check could not be made quoted both whole: 3 MB in the log (stderr for the
// command line, the agent's log) for one release. Now it names the ID cut and says how many
// nodes, naming a few.
func TestGetVolumeAnswerAboutAHugeVolumeIsQuotedCut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, getVolumeOnly)
	var logs strings.Builder
	// The answer (a megabyte and 200,000 node IDs) took 1.2 s of the check's 2 s under load:
	// past it, the warning said DeadlineExceeded, not what is under test, the answer's quoting.
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Timeouts: contentTimeouts})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	ext := h.externalID("v")
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true })
	nodes := make([]string, 200000)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%d", i)
	}
	answersAboutAnotherVolume(h, func(string) string { return "other-" + strings.Repeat("x", 1<<20) }, func([]string) []string { return nodes })
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := logs.String()
	for _, want := range []string{"could not be checked", "answered about volume", ext, "other-xxx", "200000 nodes"} {
		if !strings.Contains(got, want) {
			t.Errorf("the warning does not say %q: %.600s", want, got)
		}
	}
	if len(got) > 8<<10 {
		t.Errorf("the warning is %d bytes long: %.300s", len(got), got)
	}
}

// A plugin whose CreateVolume, or CreateSnapshot, answers with an ID holding a control
// character (an escape sequence, a NUL), which no spec can name (external_id, snapshot_id
// refuse it). Before, it was recorded: `volctl export nomad` of the volume failed its own check
// of the spec it wrote ("a volctl bug"), and a restore from the snapshot could not be written.
// Now the answer is refused as one with an ID past its bound: the volume the plugin made is
// deleted again and nothing is recorded; the snapshot's create stays recorded under its name.
func TestCreateAnsweredWithAnIDHoldingAControlCharacterIsRefused(t *testing.T) {
	t.Parallel()
	const bad = "vol-\x1b[31m-\x00"
	t.Run("volume", func(t *testing.T) {
		h := newHarness(t, nil)
		h.mem.AddVolume(csi.Volume{ID: bad, CapacityBytes: 1 << 30})
		h.mem.AnswerCreateWith(bad)
		_, err := h.e.CreateVolume(h.ctx, volume("v"))
		if err == nil {
			t.Fatalf("a create answered with volume ID %q was recorded: %+v", bad, h.volumeInfo("v"))
		}
		for _, want := range []string{"CreateVolume", "control character U+001B", "fix the plugin"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("create error = %q; want it to say %q", err, want)
			}
		}
		if _, ok := h.mem.Volume(bad); ok {
			t.Error("the plugin's volume made for the refused create is still there: DeleteVolume was not sent with its ID")
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the refused create of v is still recorded: %v", err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		h, _ := snapshotHarness(t, nil)
		h.mem.AddSnapshot(csi.Snapshot{ID: bad, SourceVolumeID: h.volumeInfo("db").ExternalID, ReadyToUse: true})
		h.mem.AnswerSnapshotWith(bad)
		_, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
		if err == nil || !strings.Contains(err.Error(), "control character U+001B") || !strings.Contains(err.Error(), "nightly") {
			t.Fatalf("snapshot answered with ID %q: %v; want it refused, naming the control character and the snapshot", bad, err)
		}
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		if err != nil {
			t.Fatal(err)
		}
		pending := false
		for _, s := range list.Snapshots {
			if s.Recorded && s.ID == bad {
				t.Errorf("snapshot %q recorded: %+v", bad, s)
			}
			pending = pending || s.Name == "nightly" && s.Pending
		}
		if !pending {
			t.Errorf("snapshots after it: %+v; want nightly's create kept, pending (the plugin took it)", list.Snapshots)
		}
	})
}
