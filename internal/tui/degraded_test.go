package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
)

// A degraded claim shows as such in the claims tab (in the bad tone, even before its first
// error is recorded) and in its detail.
func TestDegradedClaimShows(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "node-staged", Degraded: true, CreatedAt: now}
	rows := claimRows([]engine.ClaimInfo{c}, now)
	if !strings.Contains(rows[0].cells[3], "degraded") || rows[0].tone != toneBad {
		t.Errorf("claim row = %+v; want its state to say degraded, in the bad tone", rows[0])
	}
	if d := claimDetail(NewStyles(FixedRenderer(termenv.Ascii)), c, now, 100); !strings.Contains(d, "Degraded") {
		t.Errorf("claim detail lacks Degraded:\n%s", d)
	}
}
