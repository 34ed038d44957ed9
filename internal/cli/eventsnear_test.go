package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestEventsFilterTypoNamesTheNearID: `volctl events --volume log` (for "logs") printed only
// "No events match.", as for a volume with no events in the time asked, while every other
// command given a near name says which was likely meant. The filter's IDs are looked for among
// those the event log names, a deleted volume's too; one the log names gets no such words.
func TestEventsFilterTypoNamesTheNearID(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "logs", spec.SingleNodeWriter)
	h.createVolume(t, "gone", spec.SingleNodeWriter)
	if err := h.e.DeleteVolume(h.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	run := func(f engine.EventFilter, since string) string {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: f, Since: since}
		if err := eventsRun(h.ctx, opts); err != nil || out.Len() != 0 {
			t.Fatalf("events %+v: %v, %q", f, err, out)
		}
		return errOut.String()
	}
	for _, tt := range []struct {
		f    engine.EventFilter
		want string
	}{
		{engine.EventFilter{VolumeID: "log"}, `No events match: no event names volume "log" (did you mean "logs"?).`},
		{engine.EventFilter{VolumeID: "gon"}, `No events match: no event names volume "gon" (did you mean "gone"?).`},
		{engine.EventFilter{PluginID: "me"}, `No events match: no event names plugin "me" (did you mean "mem"?).`},
	} {
		if got := run(tt.f, ""); !strings.Contains(got, tt.want) {
			t.Errorf("events %+v: %q, want it to say %q", tt.f, got, tt.want)
		}
	}
	// Named by the log, with no event in the time asked: nothing to suggest.
	if got := run(engine.EventFilter{VolumeID: "logs"}, "1ns"); strings.TrimSpace(got) != "No events match." {
		t.Errorf("events --volume logs --since 1ns: %q, want No events match. alone", got)
	}
}
