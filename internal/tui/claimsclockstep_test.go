package tui

import (
	"slices"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// A claim taken after the clock stepped back an hour sorts, by AGE, as the newest: the claims
// view orders AGE by the claims' IDs (the order they were made in), not their wall-clock stamps,
// as the events view does (TestEventsNewestFirstAfterTheClockSteppedBack).
func TestClaimsNewestFirstAfterTheClockSteppedBack(t *testing.T) {
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
