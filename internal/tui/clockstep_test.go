package tui

import (
	"slices"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// chaos33: the wall clock stepped back an hour (NTP correcting a clock that ran fast) between
// two events: the events recorded before the step are stamped an hour ahead of those recorded
// after it. The events view sorted by AGE, its default, ordered them by those stamps, so the
// newest events (recorded after the step) went below the older ones, at the bottom of a long
// log, out of sight: the view the dashboard opens on to say what just happened did not show
// it. The log's order is the order its records were made in (their IDs, as `volctl events`
// and the engine's "newest N" read it); AGE sorts by that.
func TestEventsNewestFirstAfterTheClockSteppedBack(t *testing.T) {
	f := fixture()
	f.data.Events = []engine.EventInfo{ // newest first, as the engine returns them
		{ID: 3, At: testNow.Add(-10 * time.Second), Kind: "claim", VolumeID: "scratch", Alloc: "b", Message: `alloc "b" claimed volume "scratch" for write`},
		{ID: 2, At: testNow.Add(time.Hour), Kind: "release", VolumeID: "scratch", Alloc: "a", Message: `alloc "a" released volume "scratch"`},
		{ID: 1, At: testNow.Add(59 * time.Minute), Kind: "claim", VolumeID: "scratch", Alloc: "a", Message: `alloc "a" claimed volume "scratch" for write`},
	}
	h := newHarness(t, f, Options{})
	h.keys("4")
	if got, want := h.viewKeys(), []string{"3", "2", "1"}; !slices.Equal(got, want) {
		t.Errorf("events view in order %v, want the newest recorded first %v", got, want)
	}
	h.keys("S")
	if got, want := h.viewKeys(), []string{"1", "2", "3"}; !slices.Equal(got, want) {
		t.Errorf("events view reversed in order %v, want the oldest recorded first %v", got, want)
	}
}
