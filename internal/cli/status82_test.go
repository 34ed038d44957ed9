package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/engine"
)

// TestVolumeListCountsACoveredClaimUnsettledAsTheDetailAndSummaryDo: volume v's claim by alloc
// a1 is published, and a tmpfs has been mounted over its target since: the alloc writes to the
// tmpfs, not the volume. `volctl volume status v --json` says unsettled_claims 1 and names the
// cover, and `volctl status` lists v as "1 write (1 unsettled)" (both look at the targets:
// ClaimsLooked, CoveredByVolume); but the volume list, `volctl volume status` and its --json,
// reads the recorded rows alone (EachVolumeShown, writeVolumeListJSON) and says of the same
// volume at the same moment "1 write" and "unsettled_claims": 0. A script scanning the list for
// unsettled claims, or a person reading it, sees the volume settled while what the alloc writes
// is lost with the tmpfs, and the same JSON field has two values in two commands. Correct: the
// list counts a claim whose target no longer shows the volume among the volume's unsettled
// claims, in its text and its --json, as the detail, the summary and the dashboard do.
// Found by helper review82 (status).
func TestVolumeListCountsACoveredClaimUnsettledAsTheDetailAndSummaryDo(t *testing.T) {
	ctx := context.Background()
	e := coveredPublishedClaim(t)
	// The precondition: the summary counts the covered claim unsettled too.
	code, summary, errOut := runOnOut(ctx, e, "status")
	if code != ExitOK || !strings.Contains(summary, "1 write (1 unsettled)") {
		t.Fatalf("status: exit %d, want volume v's row to say \"1 write (1 unsettled)\" (the precondition):\n%s%s", code, summary, errOut)
	}

	code, list, errOut := runOnOut(ctx, e, "volume", "status")
	if code != ExitOK {
		t.Fatalf("volume status: exit %d: %s", code, errOut)
	}
	var row string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "v" {
			row = line
		}
	}
	if row == "" {
		t.Fatalf("volume status lists no row of volume v:\n%s", list)
	}
	if !strings.Contains(row, "(1 unsettled)") {
		t.Errorf("volume status: volume v's row is %q, its claim shown settled, while volume status v --json (unsettled_claims 1) and volctl status (\"1 write (1 unsettled)\") "+
			"say its target is covered by another mount; want the list to count it unsettled too", strings.TrimSpace(row))
	}

	code, js, errOut := runOnOut(ctx, e, "volume", "status", "--json")
	if code != ExitOK {
		t.Fatalf("volume status --json: exit %d: %s", code, errOut)
	}
	var vols []struct {
		ID        string `json:"id"`
		Unsettled int    `json:"unsettled_claims"`
	}
	if err := json.Unmarshal([]byte(js), &vols); err != nil || len(vols) != 1 || vols[0].ID != "v" {
		t.Fatalf("volume status --json: %v, want volume v alone\n%s", err, js)
	}
	if vols[0].Unsettled != 1 {
		t.Errorf("volume status --json: volume v has unsettled_claims %d, while volume status v --json has 1 for the same volume at the same moment (its claim's target covered): want 1", vols[0].Unsettled)
	}
}

// coveredPublishedClaim is an engine whose volume v's claim is published with data, a tmpfs
// mounted over its target since (unmounted at the test's end), and `volume status v --json`
// counting that claim unsettled, as the precondition of the views' tests.
func coveredPublishedClaim(t *testing.T) *engine.Engine {
	t.Helper()
	e, cl := publishedWithData(t)
	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH) })
	code, js, errOut := runOnOut(context.Background(), e, "volume", "status", "v", "--json")
	if code != ExitOK {
		t.Fatalf("volume status v --json: exit %d: %s", code, errOut)
	}
	var detail struct {
		Unsettled int `json:"unsettled_claims"`
	}
	if err := json.Unmarshal([]byte(js), &detail); err != nil || detail.Unsettled != 1 {
		t.Fatalf("volume status v --json: unsettled_claims %d (%v), want 1 (the precondition: the covered claim counted not at rest)\n%s", detail.Unsettled, err, js)
	}
	return e
}
