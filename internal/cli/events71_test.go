package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestOlderKindWithAVolumeFilterIsNoUsageError: `events --help` and the design say a --kind
// volctl never records is a usage error unless the log holds events of it from an older volctl.
// checkEventKind decided on the events that matched the whole filter: an older volctl's kind the
// log holds, asked with a --volume (or --plugin, --alloc) none of its events name, was refused,
// exit 2, as "no kind of event volctl records". The answer is "No events match.", exit 0, as for
// any kind with none of that volume. Found by helper review71.
func TestOlderKindWithAVolumeFilterIsNoUsageError(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	e, err := h.engine(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.PluginEvent(h.ctx, "mem", "plugin-retired-kind", "recorded by an older volctl")

	// Premise: taken without the volume filter (the log holds it).
	ios, _, out, _ := iostreams.Test()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: engine.EventFilter{Kind: "plugin-retired-kind"}}
	if err := eventsRun(h.ctx, opts); err != nil || !strings.Contains(out.String(), "recorded by an older volctl") {
		t.Fatalf("premise: events --kind of a kind the log holds: %v\n%s", err, out)
	}

	ios, _, out, errOut := iostreams.Test()
	opts = &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: engine.EventFilter{Kind: "plugin-retired-kind", VolumeID: "db"}}
	err = eventsRun(h.ctx, opts)
	if err != nil {
		t.Errorf("events --kind plugin-retired-kind --volume db, the log holding events of that kind (none of db): %v (exit %d); want \"No events match.\", exit 0\nstdout:%s\nstderr:%s",
			err, ExitCode(err), out, errOut)
	}
}
