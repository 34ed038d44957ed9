package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestRunningActionNamesItsPluginAndHowLong: an action's RPCs wait on the volume's plugin, up
// to CSI's long timeout (2 minutes) at each of the engine's attempts. A plugin that never
// answers left the status line saying `releasing the claim of "web[0]" on "mysql-0"…` for
// minutes, the same at the first second as at the sixth minute, naming neither the plugin
// waited on nor how long it had been. The line names the plugin and counts the time, at 40
// columns too.
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
	// Narrower, what it does is cut, not whom it waits on nor how long: the time came last and
	// was cut first, below about 80 columns.
	for _, w := range []int{60, 40} {
		h.send(tea.WindowSizeMsg{Width: w, Height: 24})
		line := statusText(h)
		for _, want := range []string{"releasing", `"hostpath"`, "1m35s)…"} {
			if !strings.Contains(line, want) {
				t.Errorf("95 s into a release, at %d columns the status line lacks %q: %q", w, want, line)
			}
		}
		if lw := ansi.StringWidth(line); lw > w {
			t.Errorf("at %d columns the status line is %d wide: %q", w, lw, line)
		}
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
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
