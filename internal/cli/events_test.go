package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// volctl events is the dashboard's events view on the command line: oldest first, filtered,
// as a table or JSON.
func TestEventsList(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.createVolume(t, "logs", spec.SingleNodeWriter)

	ios, _, out, _ := iostreams.Test()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now}
	if err := eventsRun(h.ctx, opts); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	reg, db, logs := strings.Index(text, `plugin "mem"`), strings.Index(text, `"db"`), strings.Index(text, `"logs"`)
	if !strings.HasPrefix(text, "TIME ") || reg < 0 || db < 0 || logs < 0 || !(reg < db && db < logs) {
		t.Errorf("want the plugin's registration, then db's and logs' creates, oldest first:\n%s", text)
	}

	ios, _, out, _ = iostreams.Test()
	opts = &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: engine.EventFilter{VolumeID: "logs"}}
	opts.Exporter.JSON = true
	if err := eventsRun(h.ctx, opts); err != nil {
		t.Fatal(err)
	}
	var evs []engine.EventInfo
	if err := json.Unmarshal(out.Bytes(), &evs); err != nil || len(evs) == 0 {
		t.Fatalf("--json --volume logs: %v\n%s", err, out)
	}
	for _, ev := range evs {
		if ev.VolumeID != "logs" {
			t.Errorf("--volume logs printed %+v", ev)
		}
	}

	// --since: an hour ahead of the clock, nothing is that recent.
	ios, _, out, errOut := iostreams.Test()
	opts = &EventsOptions{IO: ios, Engine: h.engine, Now: func() time.Time { return time.Now().Add(time.Hour) }, Since: "10m"}
	if err := eventsRun(h.ctx, opts); err != nil || out.Len() != 0 || !strings.Contains(errOut.String(), "No events match") {
		t.Errorf("--since 10m an hour later: %v, %q, %q", err, out, errOut)
	}
	// Days first, as users write them: an hour ahead of the clock, the last day and a half
	// holds every event.
	for _, days := range []string{"2d", "1d12h", "1d"} {
		ios, _, out, errOut := iostreams.Test()
		opts = &EventsOptions{IO: ios, Engine: h.engine, Now: func() time.Time { return time.Now().Add(time.Hour) }, Since: days}
		if err := eventsRun(h.ctx, opts); err != nil || out.Len() == 0 {
			t.Errorf("--since %s an hour later: %v, %q, %q; want the events", days, err, out, errOut)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "-5d", "1.5d", "d", "1dd", "99999999d", "1d-1h", "2026-03-14"} {
		opts = &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Since: bad}
		if err := eventsRun(h.ctx, opts); ExitCode(err) != 2 || !strings.Contains(err.Error(), "--since") {
			t.Errorf("--since %s: %v (exit %d), want a usage error naming --since", bad, err, ExitCode(err))
		}
	}
}

// --follow prints new events as they are recorded, one JSON object per line with --json, and
// ends without an error when its context is cancelled (Ctrl-C).
func TestEventsFollow(t *testing.T) {
	h := newCLIHarness(t)
	ios, _, _, _ := iostreams.Test()
	out := &iostreams.SyncBuffer{} // a following command writes it while the test reads it
	ios.Out = out
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: true, Poll: 10 * time.Millisecond}
	opts.Exporter.JSON = true
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()

	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 30s; output:\n%s", what, out)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("registration event", func(s string) bool { return strings.Contains(s, `"plugin-register"`) })
	h.createVolume(t, "db", spec.SingleNodeWriter)
	waitFor("event of the new volume", func(s string) bool { return strings.Contains(s, `"volume_id":"db"`) })

	for i, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev engine.EventInfo
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("line %d is not one JSON event: %v: %q", i+1, err, line)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("follow ended with %v, want nil on cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("follow did not end within 30s of its context's cancel")
	}
}

// TestEventsUnknownKindIsAUsageError: --kind matches exactly, and a kind volctl never records
// (a typo: "claims", "plugin_health") printed "No events match." and exited 0, so a CI check
// passed, and a --follow on it waited forever. A kind an older volctl recorded that the log
// still holds is taken.
func TestEventsUnknownKindIsAUsageError(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, kind := range []string{"claims", "plugin_health", "nope"} {
		for _, follow := range []bool{false, true} {
			ios, _, out, _ := iostreams.Test()
			ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
			opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: follow, Poll: 10 * time.Millisecond, Filter: engine.EventFilter{Kind: kind}}
			err := eventsRun(ctx, opts)
			cancel()
			if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `--kind "`+kind+`"`) || !strings.Contains(err.Error(), "plugin-health, plugin-register") {
				t.Errorf("events --kind %s (follow %v): %v (exit %d), want a usage error naming the kind and the kinds volctl records", kind, follow, err, ExitCode(err))
			}
			if out.Len() != 0 {
				t.Errorf("events --kind %s printed %q", kind, out)
			}
		}
	}
	ios, _, _, _ := iostreams.Test()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: engine.EventFilter{Kind: "claims"}}
	if err := eventsRun(h.ctx, opts); err == nil || !strings.Contains(err.Error(), `did you mean "claim"?`) {
		t.Errorf("events --kind claims: %v, want it to suggest \"claim\"", err)
	}

	// An older volctl's kind, in the log: taken, its events printed.
	e, err := h.engine(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.PluginEvent(h.ctx, "mem", "plugin-retired-kind", "recorded by an older volctl")
	ios, _, out, _ := iostreams.Test()
	opts = &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: engine.EventFilter{Kind: "plugin-retired-kind"}}
	if err := eventsRun(h.ctx, opts); err != nil || !strings.Contains(out.String(), "recorded by an older volctl") {
		t.Errorf("events --kind of a kind the log holds: %v\n%s", err, out)
	}
	// A kind volctl records that has no event yet is no error.
	ios, _, _, errOut := iostreams.Test()
	opts = &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Filter: engine.EventFilter{Kind: "volume-expand"}}
	if err := eventsRun(h.ctx, opts); err != nil || !strings.Contains(errOut.String(), "No events match") {
		t.Errorf("events --kind volume-expand with none recorded: %v, %q", err, errOut)
	}
}

// --since takes whole days first, 24 hours each, then a Go duration.
func TestSinceDurationTakesDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0d": 0, "2h": 2 * time.Hour, "1d30m": 24*time.Hour + 30*time.Minute,
		"36525d": 36525 * 24 * time.Hour, "106751d": 106751 * 24 * time.Hour, // as far back as hours reach ("876600h")
	} {
		if got, err := sinceDuration(in); err != nil || got != want {
			t.Errorf("sinceDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"d", "1.5d", "-1d", "+1d", "01d", "1d1d", "106752d", "106751d24h", "99999999999999999999d", "1d-1h", "1 d"} {
		if got, err := sinceDuration(bad); err == nil {
			t.Errorf("sinceDuration(%q) = %v; want it refused", bad, got)
		}
	}
	// Too long is said so, as of hours, not "not a duration".
	for _, long := range []string{"106752d", "106751d24h"} {
		if _, err := parseSince(long, time.Now()); err == nil || !strings.Contains(err.Error(), "longer than the longest duration") {
			t.Errorf("--since %s: %v, want it refused as longer than the longest duration", long, err)
		}
	}
}

// TestEventsFollowStopsWhenTheStateDatabaseIsReplaced: SQLite reads the file it opened, by
// inode. A --follow whose volctl.db was replaced under it (a backup restored, the state dir
// moved) followed the old file for good, printing nothing while every other volctl recorded in
// the new one. It stops, exit 1, saying the file was replaced and to restart it.
func TestEventsFollowStopsWhenTheStateDatabaseIsReplaced(t *testing.T) {
	h := newCLIHarness(t)
	ios, _, _, _ := iostreams.Test()
	out := &iostreams.SyncBuffer{}
	ios.Out = out
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: true, Poll: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "plugin-register"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no registration event after 30s; output:\n%s", out)
		}
	}
	storetest.Restore(t, h.state, nil) // a backup restored over volctl.db
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrReplaced) || ExitCode(err) != 1 || !strings.Contains(err.Error(), "events --follow") || !strings.Contains(err.Error(), "restart") {
			t.Errorf("follow over a replaced state database ended with %v (exit %d); want exit 1 saying it was replaced and to restart", err, ExitCode(err))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("follow went on for 30s over a state database replaced under it")
	}
}
