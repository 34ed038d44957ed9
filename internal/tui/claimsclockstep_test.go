package tui

import (
	"slices"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// mend33: the claims view's AGE sorts by the claims' wall-clock stamps, as the events view's
// did before chaos33: a claim taken after the clock stepped back an hour sorts below claims
// taken before the step, as if older. Claims' IDs are the order they were made in. Sorting AGE
// by -ID (rows.go, claimRows) passes this, but changes TestSort's "claims by age, newest
// first" tie of claims 1 and 2 (equal CreatedAt) from [5 4 3 1 2] to [5 4 3 2 1]: a change to
// an existing expectation, left to the lead.
func TestClaimsNewestFirstAfterTheClockSteppedBack(t *testing.T) {
	t.Skip("mend33: claims view's AGE sorts by wall-clock stamps; the fix changes TestSort's tie expectation — see report")
	f := fixture()
	f.data.Claims = []engine.ClaimInfo{
		{ID: 1, VolumeID: "scratch", Alloc: "a", Mode: "write", State: "published", CreatedAt: testNow.Add(59 * time.Minute)},
		{ID: 2, VolumeID: "scratch", Alloc: "b", Mode: "write", State: "published", CreatedAt: testNow.Add(time.Hour)},
		{ID: 3, VolumeID: "scratch", Alloc: "c", Mode: "write", State: "published", CreatedAt: testNow.Add(-10 * time.Second)},
	}
	h := newHarness(t, f, Options{})
	h.keys("2")
	for range 4 { // VOLUME, ALLOC, MODE, STATE, AGE (TARGET hidden at the harness's 80 columns)
		h.keys("s")
	}
	if got, want := h.viewKeys(), []string{"3", "2", "1"}; !slices.Equal(got, want) {
		t.Errorf("claims view by AGE in order %v, want the newest made first %v", got, want)
	}
}
