package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// events --follow whose first read matched nothing took where to follow from in a second
// read, of the newest event of all: an event that matched, recorded between the two, was
// newer than nothing shown and not newer than where the follow began, and was never printed.
// Here the volume's events are recorded right after the first read.
func TestEventsFollowMissesNoEventBetweenItsFirstReads(t *testing.T) {
	h := newCLIHarness(t)
	ios, _, _, _ := iostreams.Test()
	out := &iostreams.SyncBuffer{}
	ios.Out = out
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	afterFirstEventsRead = func() { h.createVolume(t, "db", spec.SingleNodeWriter) }
	defer func() { afterFirstEventsRead = nil }()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: true, Poll: 10 * time.Millisecond,
		Filter: engine.EventFilter{VolumeID: "db"}}
	opts.Exporter.JSON = true
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()

	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), `"volume_id":"db"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the event of volume db, recorded between the follow's first reads, was not printed within 5s (500 polls); output:\n%s", out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow ended with %v, want nil on cancel", err)
	}
}
