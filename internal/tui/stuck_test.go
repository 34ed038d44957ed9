package tui

import (
	"strings"
	"testing"
	"time"
)

// TestRunningActionNamesItsPluginAndHowLong: an action's RPCs wait on the volume's plugin, up
// to CSI's long timeout (2 minutes) at each of the engine's attempts. A plugin that never
// answers left the status line saying `releasing the claim of "web[0]" on "mysql-0"…` for
// minutes, the same at the first second as at the sixth minute, naming neither the plugin
// waited on nor how long it had been. The line names the plugin and counts the time.
func TestRunningActionNamesItsPluginAndHowLong(t *testing.T) {
	now := testNow
	h := newHarness(t, fixture(), Options{Now: func() time.Time { return now }})
	h.keys("2", "x", "tab") // web[0]'s claim on mysql-0, whose plugin is hostpath
	_, action := h.m.Update(keyMsg("enter"))
	now = now.Add(95 * time.Second)
	line := statusText(h)
	for _, want := range []string{`releasing the claim of "web[0]" on "mysql-0"`, `plugin "hostpath"`, "1m35s"} {
		if !strings.Contains(line, want) {
			t.Errorf("95 s into a release, the status line lacks %q: %q", want, line)
		}
	}
	h.run(action)
	if line := statusText(h); strings.Contains(line, "releasing") {
		t.Errorf("the release ended, the status line still says it runs: %q", line)
	}

	// A reconcile touches every plugin: it names none, and still counts.
	now = testNow
	h = newHarness(t, fixture(), Options{Now: func() time.Time { return now }})
	h.keys("R", "tab")
	_, action = h.m.Update(keyMsg("enter"))
	now = now.Add(12 * time.Second)
	if line := statusText(h); !strings.Contains(line, "reconciling (12s)") || strings.Contains(line, "plugin") {
		t.Errorf("12 s into a reconcile, the status line is %q", line)
	}
	h.run(action)
}

// statusText is the status line, the line above the footer.
func statusText(h *harness) string {
	lines := strings.Split(h.m.View(), "\n")
	return lines[len(lines)-2]
}
