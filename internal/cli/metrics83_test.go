package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/store"
)

// TestEventsFollowSinceADurationPrintsEventsRecordedAfterTheClockSteppedBack: `volctl events
// --since 10m --follow` shows the events of the last ten minutes, then every event recorded from
// then on. The follow holds each poll's new events to since too (for a --since TIME in the
// future), comparing their times, which are the wall clock's as the recording process read it.
// Once the host's clock steps back past since (NTP correcting a clock that ran ahead, a VM
// resumed with a wrong one: volctl's own flapping rule allows for both), every event recorded
// afterwards is stamped before since and silently dropped: the follow prints nothing, exit 0, no
// warning, until the clock catches up, though each event is newer (by ID) than the last one it
// printed. Correct: an event recorded after the follow started is printed; since past at the
// follow's start cannot hold back what is recorded later (only a since still ahead does).
// The fault: eventsRun (internal/cli/events.go) filters every poll's events with beforeSince,
// whatever since is.
// Found by helper review83 (metrics).
func TestEventsFollowSinceADurationPrintsEventsRecordedAfterTheClockSteppedBack(t *testing.T) {
	h := newCLIHarness(t)
	ios, _, _, _ := iostreams.Test()
	out, errOut := &iostreams.SyncBuffer{}, &iostreams.SyncBuffer{}
	ios.Out, ios.ErrOut = out, errOut
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: true, Poll: 10 * time.Millisecond, Since: "10m"}
	opts.Exporter.JSON = true
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()
	time.Sleep(100 * time.Millisecond) // the follow's first read
	select {
	case err := <-done:
		t.Fatalf("events --since 10m --follow ended with %v before any event", err)
	default:
	}

	// Another volctl records an event after the host's clock stepped back an hour.
	stepped := func() time.Time { return time.Now().Add(-time.Hour) }
	s, err := store.Open(context.Background(), h.state, store.WithClock(stepped))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(context.Background(), func(tx *store.Tx) error {
		return tx.Events().Append(&store.Event{Kind: "plugin-health", PluginID: "mem", Message: `plugin "mem" became unhealthy: after the step`})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(out.String(), "after the step") {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	if !strings.Contains(out.String(), "after the step") {
		t.Errorf("events --since 10m --follow did not print an event recorded while it followed, stamped by a clock stepped back an hour; "+
			"nothing said (stderr %q); stdout:\n%s", errOut.String(), out)
	}
}
