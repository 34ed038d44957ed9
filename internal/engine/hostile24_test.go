package engine

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a plugin that answers a detach's check (ControllerGetVolume) about another
// volume, whose ID is a megabyte long and which it says is published to 200,000 nodes. The
// warning that the check could not be made quoted both whole: 3 MB in the log (stderr for the
// command line, the agent's log) for one release. Now it names the ID cut and says how many
// nodes, naming a few.
func TestGetVolumeAnswerAboutAHugeVolumeIsQuotedCut(t *testing.T) {
	h := newHarness(t, getVolumeOnly)
	var logs strings.Builder
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
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
