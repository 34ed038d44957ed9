package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A plugin that exits at every start is restarted by the agent at most a minute apart for as
// long as it runs, each start, exit and restart an event: two or three a minute, which pushed
// every claim and release out of the event log (10,000 rows) within three days. Past 6 of one
// kind within an hour, one event says the plugin is looping, naming where its health is shown,
// and the rest are not recorded until the older ones are an hour old; other kinds, and other
// plugins, are recorded as ever.
func TestCrashLoopingPluginIsBoundedInTheEventLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	later := h.onAClock()
	for i := range 100 { // 100 minutes of a crash loop
		later(time.Minute)
		h.e.PluginEvent(h.ctx, "mem", "plugin-start", fmt.Sprintf("plugin %q started (pid %d)", "mem", 1000+i))
		h.e.PluginEvent(h.ctx, "mem", "plugin-daemon", fmt.Sprintf("plugin %q daemonised: its process (pid %d) exited (exit status 0), leaving pid %d serving /run/mem.sock", "mem", 1000+i, 2000+i))
		h.e.PluginEvent(h.ctx, "mem", "plugin-exit", fmt.Sprintf("plugin %q exited (exit status 1): restarting it in 1m0s", "mem"))
	}
	h.e.PluginEvent(h.ctx, "other", "plugin-exit", `plugin "other" exited (exit status 2): restarting it in 1s`)
	h.e.PluginEvent(h.ctx, "mem", "plugin-handover", `plugin "old" deregistered: its process is handed to "mem"`)
	for kind, did := range map[string]string{"plugin-start": "was started, or failed to start,", "plugin-exit": "exited", "plugin-daemon": "left a daemon"} {
		evs := pluginEvents(h, kind, "mem")
		// Within the hour, the first 6 and the notice; the window slides over 100 minutes, so
		// at most twice that.
		if len(evs) > 2*(flapChanges+1) {
			t.Fatalf("%d %s events of a plugin looping for 100 minutes; want at most %d:\n%s", len(evs), kind, 2*(flapChanges+1), strings.Join(evs, "\n"))
		}
		notice := fmt.Sprintf(`plugin "mem" is looping: it %s 6 times within an hour`, did)
		if !strings.Contains(strings.Join(evs, "\n"), notice) || !strings.Contains(strings.Join(evs, "\n"), "volctl plugin status mem") {
			t.Errorf("%s events = %q; want one saying %q and where its health is shown", kind, evs, notice)
		}
	}
	if evs := pluginEvents(h, "plugin-exit", "other"); len(evs) != 1 || strings.Contains(evs[0], "looping") {
		t.Errorf("another plugin's exit: %q; want it recorded as it is", evs)
	}
	if evs := pluginEvents(h, "plugin-handover", "mem"); len(evs) != 1 {
		t.Errorf("another kind of event of the looping plugin: %q; want it recorded", evs)
	}
	// Once the loop's events are an hour old, an exit is recorded as it is again.
	later(2 * flapWindow)
	h.e.PluginEvent(h.ctx, "mem", "plugin-exit", `plugin "mem" exited (signal: killed): restarting it in 1s`)
	if evs := pluginEvents(h, "plugin-exit", "mem"); !strings.HasPrefix(evs[0], `plugin "mem" exited (signal: killed)`) {
		t.Errorf("newest exit after the window = %q; want it recorded as it is", evs[0])
	}
}

// onAClock reopens h's engine on a clock the test moves, from 2026-12-04 08:00 UTC, and returns
// what moves it on.
func (h *harness) onAClock() (later func(time.Duration)) {
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	h.open(Config{Now: func() time.Time { return now }})
	return func(d time.Duration) { now = now.Add(d) }
}

// pluginEvents are the messages of plugin id's events of kind, newest first.
func pluginEvents(h *harness, kind, id string) []string {
	h.t.Helper()
	return messagesOf(h, EventFilter{Kind: kind, PluginID: id})
}

// messagesOf are the messages of the events f matches, newest first.
func messagesOf(h *harness, f EventFilter) []string {
	h.t.Helper()
	evs, err := h.e.Events(h.ctx, 0, f)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Message
	}
	return out
}
