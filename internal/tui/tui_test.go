package tui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
)

func TestNavigation(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		tab     tabID
		want    string // selected row key
		detail  bool
		height  int
		nRows   int
		visible []string
	}{
		{name: "starts on the first volume", want: "mysql-0"},
		{name: "down", keys: []string{"down", "j"}, want: "pg-data"},
		{name: "up stops at the top", keys: []string{"down", "up", "k", "up"}, want: "mysql-0"},
		{name: "down stops at the bottom", keys: []string{"G", "down", "down"}, want: "tmp-build"},
		{name: "end and home", keys: []string{"end", "home"}, want: "mysql-0"},
		{name: "page down", keys: []string{"pgdown"}, want: "tmp-build"},
		{name: "number picks a tab", keys: []string{"3"}, tab: tabPlugins, want: "ceph"},
		{name: "tab and shift+tab wrap", keys: []string{"shift+tab"}, tab: tabGroups, want: "nightly"},
		{name: "tab", keys: []string{"tab", "tab"}, tab: tabPlugins, want: "ceph"},
		{name: "each tab keeps its cursor", keys: []string{"down", "2", "down", "1"}, tab: tabVolumes, want: "mysql-1"},
		{name: "enter opens the detail", keys: []string{"down", "enter"}, want: "mysql-1", detail: true},
		{name: "esc closes it", keys: []string{"enter", "esc"}, want: "mysql-0"},
		{name: "switching tabs closes it", keys: []string{"enter", "2"}, tab: tabClaims, want: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := afterKeys(t, tt.keys...)
			if h.m.active != tt.tab {
				t.Errorf("tab = %s, want %s", tabNames[h.m.active], tabNames[tt.tab])
			}
			if got := h.selected(); got != tt.want {
				t.Errorf("selected %q, want %q", got, tt.want)
			}
			if (h.m.detail != nil) != tt.detail {
				t.Errorf("detail open = %v, want %v", h.m.detail != nil, tt.detail)
			}
		})
	}
}

// With more rows than fit, the cursor drags the window along and the screen shows only rows
// around it.
func TestScrolling(t *testing.T) {
	fake := fixture()
	fake.data.Volumes = manyVolumes(100)
	h := newHarness(t, fake, Options{})
	tb := h.m.tabs[tabVolumes]
	if tb.height != 20 {
		t.Fatalf("80x24 shows %d rows, want 20", tb.height)
	}
	h.keys("end")
	if h.selected() != "vol-00099" || tb.offset != 80 {
		t.Fatalf("end: selected %q offset %d, want vol-00099 at offset 80", h.selected(), tb.offset)
	}
	out := h.m.View()
	if !strings.Contains(out, "> vol-00099") || strings.Contains(out, "vol-00079") {
		t.Errorf("screen at the end shows the wrong rows:\n%s", out)
	}
	h.keys("pgup")
	if h.selected() != "vol-00080" || tb.offset != 80 {
		t.Errorf("pgup: selected %q offset %d, want vol-00080 at offset 80", h.selected(), tb.offset)
	}
	h.keys("up")
	if tb.offset != 79 {
		t.Errorf("up past the top of the window: offset %d, want 79", tb.offset)
	}
	// A smaller screen keeps the cursor on screen.
	h.send(tea.WindowSizeMsg{Width: 80, Height: 12})
	if tb.cursor < tb.offset || tb.cursor >= tb.offset+tb.height {
		t.Errorf("after resize, cursor %d outside the window [%d, %d)", tb.cursor, tb.offset, tb.offset+tb.height)
	}
	checkScreen(t, h.m.View(), 80, 12)
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name      string
		keys      []string // pressed on the volumes tab; a leading digit picks another tab
		want      []string
		filtering bool
		filter    string
	}{
		{name: "matches while typing", keys: []string{"/", "m", "y", "s"}, want: []string{"mysql-0", "mysql-1"}, filtering: true, filter: "mys"},
		{name: "any column: plugin", keys: []string{"/", "ceph", "enter"}, want: []string{"pg-data"}, filter: "ceph"},
		{name: "any column: mode", keys: []string{"/", "BLOCK", "enter"}, want: []string{"pg-data"}, filter: "BLOCK"},
		{name: "any column: schedulable", keys: []string{"/", "creating", "enter"}, want: []string{"tmp-build"}, filter: "creating"},
		{name: "enter keeps it", keys: []string{"/", "nfs", "enter"}, want: []string{"shared-media"}, filter: "nfs"},
		{name: "esc while typing clears it", keys: []string{"/", "nfs", "esc"}, want: allVolumes},
		{name: "esc afterwards clears it", keys: []string{"/", "nfs", "enter", "esc"}, want: allVolumes},
		{name: "backspace widens it", keys: []string{"/", "mysql-0", "backspace", "enter"}, want: []string{"mysql-0", "mysql-1"}, filter: "mysql-"},
		{name: "ctrl+u empties it", keys: []string{"/", "mysql", "ctrl+u", "enter"}, want: allVolumes},
		{name: "/ again edits it", keys: []string{"/", "mysql", "enter", "/", "-1", "enter"}, want: []string{"mysql-1"}, filter: "mysql-1"},
		{name: "no match", keys: []string{"/", "zzz", "enter"}, want: []string{}, filter: "zzz"},
		{name: "keys are text while typing", keys: []string{"/", "q", "2", "s"}, want: []string{}, filtering: true, filter: "q2s"},
		{name: "claims by state", keys: []string{"2", "/", "reconcile", "enter"}, want: []string{"5"}, filter: "reconcile"},
		{name: "events by message", keys: []string{"4", "/", "unhealthy", "enter"}, want: []string{"8"}, filter: "unhealthy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := afterKeys(t, tt.keys...)
			if got := h.viewKeys(); !slices.Equal(got, tt.want) {
				t.Errorf("rows %v, want %v", got, tt.want)
			}
			if h.m.filtering != tt.filtering {
				t.Errorf("filtering = %v, want %v", h.m.filtering, tt.filtering)
			}
			if f := h.m.tabs[h.m.active].filter; f != tt.filter {
				t.Errorf("filter = %q, want %q", f, tt.filter)
			}
		})
	}
}

var allVolumes = []string{"mysql-0", "mysql-1", "pg-data", "scratch", "shared-media", "tmp-build"}

func TestFilterIsPerTabAndSurvivesRefresh(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("/", "mysql", "enter", "2")
	if got := h.viewKeys(); len(got) != 5 {
		t.Errorf("claims filtered by the volumes' filter: %v", got)
	}
	h.keys("1", "r")
	if got := h.viewKeys(); !slices.Equal(got, []string{"mysql-0", "mysql-1"}) {
		t.Errorf("after refresh: %v, want the filter still applied", got)
	}
	if !strings.Contains(h.m.View(), "1 Volumes 2/6") {
		t.Errorf("tab bar does not count filtered rows:\n%s", h.m.View())
	}
}

func TestSort(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want []string
	}{
		{name: "by ID", want: allVolumes},
		{name: "reversed", keys: []string{"S"}, want: reversed(allVolumes)},
		// s moves to PLUGIN (NAME is hidden at 80 columns); ties keep the data's order.
		{name: "by plugin", keys: []string{"s"}, want: []string{"pg-data", "mysql-0", "mysql-1", "scratch", "tmp-build", "shared-media"}},
		// Capacity sorts by bytes, not by its text: 1.0 GiB < 10 GiB < 100 GiB < 500 GiB.
		{name: "by capacity", keys: []string{"s", "s"}, want: []string{"tmp-build", "scratch", "mysql-0", "mysql-1", "pg-data", "shared-media"}},
		{name: "by capacity, largest first", keys: []string{"s", "s", "S"}, want: []string{"shared-media", "pg-data", "mysql-0", "mysql-1", "scratch", "tmp-build"}},
		{name: "s after the last column wraps to ID", keys: []string{"s", "s", "s", "s", "s", "s"}, want: allVolumes},
		{name: "claims by age, newest first", keys: []string{"2", "s", "s", "s", "s"}, want: []string{"5", "4", "3", "2", "1"}},
		{name: "events newest first by default", keys: []string{"4"}, want: []string{"9", "8", "7", "6", "5", "4", "3", "2", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := afterKeys(t, tt.keys...)
			if got := h.viewKeys(); !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSortOutlastsAResize: a column hidden by a narrow screen cannot be sorted by, so the table
// sorts by the first shown instead; but that was kept, and the user's sort (by NAME, newest
// first...) was lost for good by a pane zoomed out and back, a terminal dragged to 1x1 and back.
// The sort chosen comes back with its column; the cursor stays on its row throughout.
func TestSortOutlastsAResize(t *testing.T) {
	fake := fixture()
	fake.data.Volumes[0].Name = "zz-last" // mysql-0 sorts last by NAME
	h := newHarness(t, fake, Options{})
	h.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	h.keys("s", "S") // NAME, shown at 120 columns, descending
	want := h.viewKeys()
	if want[0] != "mysql-0" || h.m.tabs[tabVolumes].cols[h.m.tabs[tabVolumes].sortCol].title != "NAME" {
		t.Fatalf("not sorted by NAME, descending: %v", want)
	}
	h.keys("down", "down")
	sel := h.selected()
	for _, size := range [][2]int{{80, 24}, {1, 1}, {40, 10}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		h.send(tea.WindowSizeMsg{Width: 120, Height: 30})
		if got := h.viewKeys(); !slices.Equal(got, want) {
			t.Errorf("after a resize to %dx%d and back, the order is %v, want %v (by NAME, descending)", size[0], size[1], got, want)
		}
		if h.selected() != sel {
			t.Errorf("after a resize to %dx%d and back, the cursor is on %q, want %q", size[0], size[1], h.selected(), sel)
		}
	}
	if out := h.m.View(); !strings.Contains(out, "NAME ↓") {
		t.Errorf("the header does not mark the sort:\n%s", out)
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestCursorFollowsItsRow(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("down", "down") // pg-data
	h.keys("S")            // reverse: pg-data moves
	if h.selected() != "pg-data" {
		t.Fatalf("after sorting, selected %q, want pg-data", h.selected())
	}
	// A refresh with a new volume sorting before it keeps the cursor on pg-data.
	h.fake.data.Volumes = append(h.fake.data.Volumes, engine.VolumeSummary{ID: "zeta", State: "ready"})
	h.keys("r")
	if h.selected() != "pg-data" {
		t.Errorf("after refresh, selected %q, want pg-data", h.selected())
	}
	// When its row goes, the cursor stays where it was on screen, on the row after it.
	at := h.m.tabs[tabVolumes].cursor
	next := h.viewKeys()[at+1]
	h.fake.data.Volumes = slices.DeleteFunc(h.fake.data.Volumes, func(v engine.VolumeSummary) bool { return v.ID == "pg-data" })
	h.keys("r")
	if got := h.m.tabs[tabVolumes].cursor; got != at || h.selected() != next {
		t.Errorf("after its row went: cursor %d on %q, want %d on %q", got, h.selected(), at, next)
	}
	// At the end of the list it steps back onto the new last row.
	h.keys("G")
	h.fake.data.Volumes = h.fake.data.Volumes[1:] // mysql-0, last in reverse order, goes
	h.keys("r")
	if keys := h.viewKeys(); h.selected() != keys[len(keys)-1] {
		t.Errorf("cursor on %q, want the last row %q", h.selected(), keys[len(keys)-1])
	}
}

func TestConfirmation(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		calls []string // engine calls other than reads
	}{
		{name: "enter on Cancel does nothing", keys: []string{"2", "x", "enter"}},
		{name: "esc cancels", keys: []string{"2", "x", "esc"}},
		{name: "n cancels", keys: []string{"2", "x", "n"}},
		{name: "q cancels, does not quit", keys: []string{"2", "x", "q"}},
		{name: "moving back to Cancel", keys: []string{"2", "x", "tab", "tab", "enter"}},
		{name: "release", keys: []string{"2", "x", "tab", "enter"}, calls: []string{"Release(mysql-0, web[0])"}},
		{name: "release from the claim detail", keys: []string{"2", "G", "enter", "x", "right", "enter"}, calls: []string{"Release(shared-media, render-1)"}},
		{name: "detach", keys: []string{"down", "d", "l", "enter"}, calls: []string{"Detach(mysql-1, false)"}},
		{name: "delete", keys: []string{"G", "D", "tab", "enter"}, calls: []string{"DeleteVolume(tmp-build)"}},
		{name: "delete from the volume detail", keys: []string{"down", "down", "down", "enter", "D", "tab", "enter"}, calls: []string{"DeleteVolume(scratch)"}},
		{name: "force detach", keys: []string{"down", "F", "tab", "enter"}, calls: []string{"Detach(mysql-1, true)"}},
		{name: "reconcile", keys: []string{"R", "tab", "enter"}, calls: []string{"Reconcile()"}},
		{name: "no delete with claims", keys: []string{"D", "tab", "enter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := afterKeys(t, tt.keys...)
			if h.m.dialog != nil {
				t.Error("dialog still open")
			}
			if h.quit {
				t.Error("quit")
			}
			if got := actionCalls(h.fake.Calls()); !slices.Equal(got, tt.calls) {
				t.Errorf("engine calls %v, want %v", got, tt.calls)
			}
		})
	}
}

func actionCalls(calls []string) []string {
	return slices.DeleteFunc(calls, func(c string) bool {
		return strings.HasPrefix(c, "Dashboard") || strings.HasPrefix(c, "PluginStatus") || strings.HasPrefix(c, "Volume(")
	})
}

func TestDialogOpensWithCancelFocused(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("G", "D")
	if h.m.dialog == nil {
		t.Fatal("no dialog")
	}
	if h.m.dialog.accept {
		t.Error("dialog opened with the action focused")
	}
	if out := h.m.View(); !strings.Contains(out, "[ Cancel ]") || !strings.Contains(out, `Delete volume "tmp-build"?`) {
		t.Errorf("dialog does not show Cancel focused and the volume:\n%s", out)
	}
	// Keys meant for the table do not reach it behind the dialog.
	h.keys("down", "2", "/")
	if h.m.active != tabVolumes || h.selected() != "tmp-build" || h.m.filtering {
		t.Errorf("keys leaked past the dialog: tab %d, selected %q, filtering %v", h.m.active, h.selected(), h.m.filtering)
	}
}

func TestActionRunsInBackgroundWithSpinner(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("2", "x", "tab")
	// Choose, but hold back the command: the action is "running".
	_, cmd := h.m.Update(keyMsg("enter"))
	if h.m.status.running == nil {
		t.Fatal("no running action after choosing")
	}
	if got := actionCalls(h.fake.Calls()); len(got) != 0 {
		t.Fatalf("Update called the engine itself: %v", got)
	}
	out := h.m.View()
	if !strings.Contains(out, `releasing the claim of "web[0]" on "mysql-0" (plugin "hostpath")…`) {
		t.Errorf("status line does not show the running action:\n%s", out)
	}
	// Another action waits for this one.
	h.keys("x")
	if h.m.dialog != nil {
		t.Error("a second dialog opened while an action runs")
	}
	h.run(cmd)
	if h.m.status.running != nil {
		t.Error("still running after the result came")
	}
	if !strings.Contains(h.m.View(), `released the claim of "web[0]" on "mysql-0"`) {
		t.Errorf("status line does not report the result:\n%s", h.m.View())
	}
	// The result triggers a read, so the claim is gone from the list.
	if got := h.viewKeys(); slices.Contains(got, "1") {
		t.Errorf("released claim still listed: %v", got)
	}
}

func TestActionErrors(t *testing.T) {
	conflict := fmt.Errorf("delete volume %q: %w: volume has 1 live claim(s)", "scratch", engine.ErrConflict)
	tests := []struct {
		name   string
		setup  func(*fakeEngine)
		keys   []string
		status string
	}{
		{name: "engine refuses", setup: func(f *fakeEngine) { f.deleteErr = conflict },
			keys: []string{"down", "down", "down", "D", "tab", "enter"}, status: "error: delete volume \"scratch\": conflict"},
		{name: "delete refused with claims", keys: []string{"down", "down", "D"},
			status: `error: "pg-data" has 1 live claim: release or detach first`},
		{name: "release error", setup: func(f *fakeEngine) { f.releaseErr = errors.New("NodeUnpublishVolume: Internal: boom") },
			keys: []string{"2", "x", "tab", "enter"}, status: "error: NodeUnpublishVolume: Internal: boom"},
		{name: "release needs a claim", keys: []string{"x"}, status: "error: release needs a claim"},
		{name: "detach needs a volume", keys: []string{"3", "d"}, status: "error: detach needs a volume"},
		{name: "delete needs a volume", keys: []string{"2", "enter", "D"}, status: "error: delete needs a volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fixture()
			if tt.setup != nil {
				tt.setup(fake)
			}
			h := newHarness(t, fake, Options{})
			h.keys(tt.keys...)
			if h.m.dialog != nil {
				t.Error("a dialog is open")
			}
			if out := h.m.View(); !strings.Contains(out, tt.status) {
				t.Errorf("status line lacks %q:\n%s", tt.status, out)
			}
		})
	}
}

// An error longer than the status line opens in a box, whole; any closing key dismisses it.
// TestErrorTallerThanTheScreenScrolls: a plugin's error message may be 4 KiB (csi's
// MaxPluginMessage), and a reconcile's or a detach's names every claim that failed: wrapped in
// the error box, it was taller than the screen, and the box was cut at the body's foot, its end
// (where an error says what to do), its OK button and its border never drawn. The box now fits
// the body, says how much it shows, and scrolls with the movement keys.
func TestErrorTallerThanTheScreenScrolls(t *testing.T) {
	fake := fixture()
	fake.releaseErr = errors.New("NodeUnpublishVolume: Internal: " + strings.Repeat("the plugin's many words ", 150) +
		"(unmount it by hand, then release again)")
	for _, size := range [][2]int{{80, 24}, {40, 10}, {120, 40}} {
		h := newHarness(t, fake, Options{})
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		h.keys("2", "x", "tab", "enter")
		if h.m.failure == nil {
			t.Fatalf("%dx%d: no error box for a long error", size[0], size[1])
		}
		out := h.m.View()
		checkScreen(t, out, size[0], size[1])
		flat := strings.Join(strings.Fields(out), " ")
		for _, part := range []string{"Release failed", "NodeUnpublishVolume", "[ OK ]", "╰", "scroll"} {
			if !strings.Contains(flat, part) {
				t.Errorf("%dx%d: the error box lacks %q: cut at the foot of the screen\n%s", size[0], size[1], part, out)
			}
		}
		h.keys("G")
		out = h.m.View()
		checkScreen(t, out, size[0], size[1])
		if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, "again)") || !strings.Contains(flat, "[ OK ]") {
			t.Errorf("%dx%d: scrolled to its end, the error box does not show its end:\n%s", size[0], size[1], out)
		}
		h.keys("g", "down", "pgdown", "up", "pgup")
		if flat := strings.Join(strings.Fields(h.m.View()), " "); h.m.failure == nil || strings.Contains(flat, "again)") {
			t.Errorf("%dx%d: scrolling closed the box or did not come back to its top:\n%s", size[0], size[1], h.m.View())
		}
		h.keys("enter")
		if h.m.failure != nil {
			t.Errorf("%dx%d: enter does not close the error box", size[0], size[1])
		}
	}
}

// TestQuestionTallerThanTheScreenScrolls: a forced detach's question names every alloc it
// releases, and a volume may have hundreds of claims (a multi-node reader): the box ran past the
// body's foot and was cut there, its buttons never drawn, so what enter would do was not on the
// screen. The question fits the body, scrolls as an error does, and the buttons always show.
func TestQuestionTallerThanTheScreenScrolls(t *testing.T) {
	fake := fixture()
	for i := range 300 {
		c := fake.data.Claims[1] // on mysql-1
		c.ID, c.Alloc, c.Group = int64(100+i), fmt.Sprintf("reader-%d", i), ""
		fake.data.Claims = append(fake.data.Claims, c)
	}
	h := newHarness(t, fake, Options{})
	h.keys("down", "F")
	if h.m.dialog == nil {
		t.Fatal("no dialog")
	}
	out := h.m.View()
	checkScreen(t, out, 80, 24)
	flat := strings.Join(strings.Fields(out), " ")
	for _, part := range []string{"Force-detach volume?", "[ Cancel ]", "Force-detach", "╰", "scroll"} {
		if !strings.Contains(flat, part) {
			t.Errorf("the question lacks %q: cut at the foot of the screen\n%s", part, out)
		}
	}
	h.keys("G")
	if flat := strings.Join(strings.Fields(h.m.View()), " "); !strings.Contains(flat, `"reader-299".`) || !strings.Contains(flat, "[ Cancel ]") {
		t.Errorf("scrolled to its end, the question does not show its end and its buttons:\n%s", h.m.View())
	}
	h.keys("esc")
	if h.m.dialog != nil || len(actionCalls(h.fake.Calls())) != 0 {
		t.Error("esc did not cancel the scrolled question")
	}
}

// TestLongWarningShownWhole: an action that succeeds may warn of what it left undone: a forced
// detach whose ControllerUnpublishVolume failed says the attachment is owed and reconcile sends
// it. Said in the status line only, it was cut at the screen's width, "force-detached "mysql-1":
// released 1 claim; forced detach of…", and gone five seconds later; only an error opened in a
// box. A result too long for the line opens whole in the box too, titled as done.
func TestLongWarningShownWhole(t *testing.T) {
	fake := fixture()
	fake.detachWarnings = []string{`forced detach of volume "mysql-1": ControllerUnpublishVolume: Unavailable: connection refused ` +
		`(volctl reconcile sends it again once plugin "hostpath" answers)`}
	h := newHarness(t, fake, Options{})
	h.keys("down", "F", "tab", "enter")
	if h.m.failure == nil {
		t.Fatalf("no box for a result too long for the status line; the screen:\n%s", h.m.View())
	}
	out := h.m.View()
	checkScreen(t, out, 80, 24)
	flat := strings.Join(strings.Fields(out), " ")
	for _, part := range []string{"Force-detach done", `released 1 claim`, `once plugin "hostpath" answers)`, "[ OK ]"} {
		if !strings.Contains(flat, part) {
			t.Errorf("the box lacks %q:\n%s", part, out)
		}
	}
	if h.m.status.failed {
		t.Error("a detach that succeeded with a warning is shown as failed")
	}
	// A short result stays in the status line alone.
	h.keys("enter")
	fake.detachWarnings = nil
	h.keys("1", "home", "F", "tab", "enter")
	if h.m.failure != nil {
		t.Errorf("a short result opened a box: %q", h.m.failure.err)
	}
}

func TestLongActionErrorShownWhole(t *testing.T) {
	long := `claim "pg-data" for alloc "db-0": NodeUnpublishVolume: FailedPrecondition: target is busy: ` +
		`a process still has files open under /var/lib/volctl/publish/db-0/pg-data (stop it, then release again)`
	fake := fixture()
	fake.releaseErr = errors.New(long)
	h := newHarness(t, fake, Options{})
	h.keys("2", "down", "down", "x", "tab", "enter")
	if h.m.failure == nil {
		t.Fatal("no error box for a long error")
	}
	out := h.m.View()
	checkScreen(t, out, 80, 24)
	flat := strings.Join(strings.Fields(out), " ")
	for _, part := range []string{"Release failed", "target is busy", "(stop it, then release again)", "[ OK ]"} {
		if !strings.Contains(flat, part) {
			t.Errorf("error box lacks %q:\n%s", part, out)
		}
	}
	h.keys("down")
	if h.m.failure == nil || h.selected() != "5" {
		t.Error("a key other than enter/esc closed the box or moved the table")
	}
	h.keys("enter")
	if h.m.failure != nil {
		t.Error("enter does not close the error box")
	}
	if !strings.Contains(h.m.View(), "error: claim") {
		t.Error("the status line lost the error")
	}
}

func TestReadOnly(t *testing.T) {
	h := newHarness(t, fixture(), Options{ReadOnly: true})
	for _, keys := range [][]string{{"d"}, {"D"}, {"2", "x"}, {"2", "enter", "x"}} {
		h.keys(keys...)
		if h.m.dialog != nil {
			t.Fatalf("%v opened a dialog in a read-only dashboard", keys)
		}
		h.keys("esc", "1")
	}
	if got := actionCalls(h.fake.Calls()); len(got) != 0 {
		t.Errorf("read-only dashboard acted: %v", got)
	}
	h.keys("d")
	out := h.m.View()
	if !strings.Contains(out, "read-only") || strings.Contains(out, "d detach") {
		t.Errorf("read-only is not shown, or action keys are offered:\n%s", out)
	}
	h.keys("?")
	if out := h.m.View(); strings.Contains(out, "release") && strings.Contains(out, "x ") {
		t.Errorf("help offers actions in a read-only dashboard:\n%s", out)
	}
}

// TestQuitWhileAnActionRunsAsksAgain: quitting ends the context every engine call runs under,
// so q while a detach or delete ran cut it short between its RPCs, leaving the claims and the
// volume half-way for a reconcile to finish (or for nobody, without an agent). q then says what
// runs and what quitting would do, and quits only when pressed again; ctrl+c quits at once, as
// ever, and so does q once the action is done.
func TestQuitWhileAnActionRunsAsksAgain(t *testing.T) {
	for _, first := range []string{"", "?"} { // from the table, and from the help screen
		h := newHarness(t, fixture(), Options{})
		h.keys("down", "d", "tab")
		_, action := h.m.Update(keyMsg("enter")) // chosen; the detach is out
		h.keys(first)
		if _, cmd := h.m.Update(keyMsg("q")); isQuit(cmd) {
			t.Errorf("q (after %q) quit while detaching: the detach is cut short, its claims left half-way", first)
		}
		if out := h.m.View(); !strings.Contains(out, "q again") {
			t.Errorf("q while an action runs does not say to press it again:\n%s", out)
		}
		if _, cmd := h.m.Update(keyMsg("q")); !isQuit(cmd) {
			t.Error("q pressed again does not quit")
		}
		h.run(action)
	}
	h := newHarness(t, fixture(), Options{})
	h.keys("down", "d", "tab")
	h.m.Update(keyMsg("enter"))
	if _, cmd := h.m.Update(keyMsg("ctrl+c")); !isQuit(cmd) {
		t.Error("ctrl+c does not quit at once while an action runs")
	}
	h = newHarness(t, fixture(), Options{})
	h.keys("down", "d", "tab", "enter", "q") // the action done, q quits
	if !h.quit {
		t.Error("q after the action ended does not quit")
	}
}

func TestHelpAndQuit(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("?")
	if !h.m.showHelp {
		t.Fatal("? does not open help")
	}
	out := h.m.View()
	for _, group := range []string{"Move", "Views", "Find", "Act", "General"} {
		if !strings.Contains(out, group) {
			t.Errorf("help lacks group %q:\n%s", group, out)
		}
	}
	h.keys("down")
	if h.selected() != "mysql-0" {
		t.Error("keys move the table behind help")
	}
	h.keys("esc")
	if h.m.showHelp {
		t.Error("esc does not close help")
	}
	h.keys("?", "?")
	if h.m.showHelp {
		t.Error("? does not close help")
	}
	for _, k := range []string{"q", "ctrl+c"} {
		h := newHarness(t, fixture(), Options{})
		h.keys(k)
		if !h.quit {
			t.Errorf("%s does not quit", k)
		}
	}
	h = newHarness(t, fixture(), Options{})
	h.keys("/", "q")
	if h.quit {
		t.Error("q quits while typing a filter")
	}
	h.keys("ctrl+c")
	if !h.quit {
		t.Error("ctrl+c does not quit while typing a filter")
	}
}

func TestLiveRefresh(t *testing.T) {
	fake := fixture()
	h := newHarness(t, fake, Options{})
	if got := fake.Calls(); !slices.Contains(got, "Dashboard(200)") || !slices.Contains(got, "PluginStatus()") {
		t.Fatalf("Init did not read and probe: %v", got)
	}
	if !slices.Equal(h.timers.scheduled, []time.Duration{DefaultRefresh, DefaultProbe}) {
		t.Fatalf("timers %v, want refresh %v and probe %v", h.timers.scheduled, DefaultRefresh, DefaultProbe)
	}

	// The refresh timer re-arms itself and reads.
	before := len(fake.Calls())
	h.send(refreshTickMsg{})
	if got := fake.Calls()[before:]; !slices.Equal(got, []string{"Dashboard(200)"}) {
		t.Errorf("refresh tick called %v", got)
	}
	if last := h.timers.scheduled[len(h.timers.scheduled)-1]; last != DefaultRefresh {
		t.Errorf("refresh tick re-armed %v", last)
	}

	// A tick while a read is still out re-arms without piling up a second read.
	_, cmd := h.m.Update(refreshTickMsg{})
	n := len(h.timers.scheduled)
	_, cmd2 := h.m.Update(refreshTickMsg{})
	if len(h.timers.scheduled) != n+1 {
		t.Error("tick during a read did not re-arm")
	}
	before = len(fake.Calls())
	h.run(cmd2)
	if got := fake.Calls()[before:]; len(got) != 0 {
		t.Errorf("tick during a read read again: %v", got)
	}
	h.run(cmd)

	// A plugin going unhealthy shows after the next probe.
	fake.probed = slices.Clone(fake.data.Plugins)
	fake.probed[1].Healthy, fake.probed[1].Ready, fake.probed[1].LastError = false, false, "Probe: Unavailable: connection refused"
	h.keys("3", "down")
	if !strings.Contains(rowText(h), "healthy") || strings.Contains(rowText(h), "unhealthy") {
		t.Fatalf("hostpath should start healthy: %q", rowText(h))
	}
	h.send(probeTickMsg{})
	if !strings.Contains(rowText(h), "unhealthy") {
		t.Errorf("after a probe, hostpath row is %q, want unhealthy", rowText(h))
	}
	if last := h.timers.scheduled[len(h.timers.scheduled)-1]; last != DefaultProbe {
		t.Errorf("probe tick re-armed %v", last)
	}
}

func rowText(h *harness) string {
	if r := h.m.tabs[h.m.active].selected(); r != nil {
		return strings.Join(r.cells, " ")
	}
	return ""
}

func TestStaleAndFailedReads(t *testing.T) {
	fake := fixture()
	h := newHarness(t, fake, Options{})
	// A read asked for while one is out follows that one: the rows end on the newest data.
	old := h.m.live.read()
	fake.data.Volumes = fake.data.Volumes[:1]
	h.run(h.m.live.read())
	h.run(old)
	if got := h.viewKeys(); len(got) != 1 {
		t.Errorf("a stale read replaced a newer one: %v", got)
	}
	if h.m.live.reading {
		t.Error("still marked reading")
	}

	// A failed read keeps the data and says so.
	fake.dashErr = errors.New("database is locked")
	h.keys("r")
	if got := h.viewKeys(); len(got) != 1 {
		t.Errorf("a failed read changed the rows: %v", got)
	}
	if out := h.m.View(); !strings.Contains(out, "read failed: database is locked") {
		t.Errorf("failed read not shown:\n%s", out)
	}
	fake.dashErr = nil
	h.keys("r")
	if out := h.m.View(); strings.Contains(out, "read failed") {
		t.Errorf("error still shown after a good read:\n%s", out)
	}
}

func TestDetailFollowsRefresh(t *testing.T) {
	fake := fixture()
	h := newHarness(t, fake, Options{})
	h.keys("enter")
	if !strings.Contains(h.m.View(), "External ID       = vol-7f3a") {
		t.Fatalf("volume detail:\n%s", h.m.View())
	}
	reads := strings.Count(strings.Join(fake.Calls(), " "), "Volume(mysql-0)")
	h.send(refreshTickMsg{})
	if got := strings.Count(strings.Join(fake.Calls(), " "), "Volume(mysql-0)"); got != reads+1 {
		t.Errorf("refresh did not re-read the open volume (%d reads, want %d)", got, reads+1)
	}
	delete(fake.volumes, "mysql-0")
	fake.data.Volumes = fake.data.Volumes[1:] // gone from the store, summary and all
	h.send(refreshTickMsg{})
	if !strings.Contains(h.m.View(), `volume "mysql-0" no longer exists`) {
		t.Errorf("deleted volume's detail:\n%s", h.m.View())
	}

	h.keys("2", "enter")
	if !strings.Contains(h.m.View(), "Claim ID          = 1") {
		t.Fatalf("claim detail:\n%s", h.m.View())
	}
	fake.data.Claims = fake.data.Claims[1:]
	h.keys("r")
	if !strings.Contains(h.m.View(), "no longer live") {
		t.Errorf("released claim's detail:\n%s", h.m.View())
	}
	h.keys("x")
	if h.m.dialog != nil {
		t.Error("release offered for a claim that is gone")
	}
}

func TestDetailScrolls(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("enter")
	d := h.m.detail
	if d.vp.TotalLineCount() <= d.vp.VisibleLineCount() {
		t.Fatalf("volume detail fits on 80x24 (%d lines); the test needs it to scroll", d.vp.TotalLineCount())
	}
	h.keys("down", "down")
	if d.vp.YOffset != 2 {
		t.Errorf("offset %d after two downs, want 2", d.vp.YOffset)
	}
	h.keys("G")
	if !d.vp.AtBottom() || !strings.Contains(h.m.View(), "/srv/volctl/vol-7f3a") { // the last section, Context
		t.Errorf("G does not reach the end:\n%s", h.m.View())
	}
	// A refresh keeps the scroll position.
	y := d.vp.YOffset
	h.keys("r")
	if d.vp.YOffset != y {
		t.Errorf("refresh moved the detail from %d to %d", y, d.vp.YOffset)
	}
}

func TestSmallAndResizedScreens(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.send(tea.WindowSizeMsg{Width: 30, Height: 8})
	if out := h.m.View(); !strings.Contains(strings.Join(strings.Fields(out), " "), "needs at least 40x10") { // wrapped to the screen
		t.Errorf("tiny screen: %q", out)
	}
	for _, size := range [][2]int{{40, 10}, {80, 24}, {100, 30}, {120, 40}, {200, 60}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, tab := range []string{"1", "2", "3", "4"} {
			h.keys(tab)
			checkScreen(t, h.m.View(), size[0], size[1])
			h.keys("enter")
			checkScreen(t, h.m.View(), size[0], size[1])
			h.keys("esc")
		}
	}
}

// TestTooSmallScreenSaysSoWithinIt: below 40x10 the dashboard says what it needs and how to
// set the size. Said on one line, the terminal's renderer cut it at the screen's width (bubbletea
// truncates every line wider than the screen), so a 30x8 terminal read "volctl tui needs at
// least 40x1" and never how to get there. It is wrapped to the screen, cut to its height, and
// back to a real size the dashboard draws as before.
func TestTooSmallScreenSaysSoWithinIt(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	for _, size := range [][2]int{{39, 9}, {30, 8}, {25, 6}, {12, 3}, {1, 1}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		out := h.m.View()
		lines := strings.Split(out, "\n")
		if len(lines) > size[1] {
			t.Errorf("%dx%d: %d lines, more than the screen's %d: %q", size[0], size[1], len(lines), size[1], out)
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%dx%d: line %d is %d cells wide, wider than the screen: %q", size[0], size[1], i+1, w, l)
			}
		}
		if size[0]*size[1] < 150 {
			continue // too small to say it all: said as far as it goes
		}
		said := strings.Join(strings.Fields(out), " ")
		if want := fmt.Sprintf("needs at least 40x10; this terminal is %dx%d: make it larger, or set its size with stty rows 24 cols 80", size[0], size[1]); !strings.Contains(said, want) {
			t.Errorf("%dx%d: %q does not say %q", size[0], size[1], out, want)
		}
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	checkScreen(t, h.m.View(), 80, 24)
}

// TestHugeScreenIsBounded: a terminal may report up to 65535x65535 (stty rows 65535 cols
// 65535). Each frame is padded to the screen, so one that large was 4 billion cells and took
// more than 12 GB; the dashboard draws at most maxWidth x maxHeight of it, in every view.
func TestHugeScreenIsBounded(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	// 5000x3000 first: it fails the old code in a second, where 65535x65535 took the machine.
	for _, size := range [][2]int{{5000, 3000}, {65535, 65535}, {65535, 20}, {80, 65535}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		w, ht := min(size[0], 2000), min(size[1], 1000)
		for _, tab := range []string{"1", "2", "3", "4"} {
			h.keys(tab)
			for _, view := range []string{"list", "detail"} {
				if view == "detail" {
					h.keys("enter")
				}
				out := h.m.View()
				if n := strings.Count(out, "\n") + 1; n > ht {
					t.Fatalf("%dx%d, tab %s's %s: a frame of %d lines, more than the %d drawn at most", size[0], size[1], tab, view, n, ht)
				}
				checkScreen(t, out, w, ht)
			}
			h.keys("esc")
		}
	}
}

// TestNoOrNegativeScreenSize: a terminal that does not know its size (a serial console, a pty
// nobody sized) reports 0x0, and a multiplexer or a test can send a negative size. A negative
// width hid every column and sorted by column -1 (a panic); 0x0 drew nothing at all, as if no
// size had come yet. Each says what it needs and how to set the size, in every view.
func TestNoOrNegativeScreenSize(t *testing.T) {
	if out := New(context.Background(), Options{Engine: fixture(), Renderer: FixedRenderer(termenv.Ascii)}).View(); out != "" {
		t.Errorf("before any size: %q, want nothing", out)
	}
	h := newHarness(t, fixture(), Options{})
	for _, size := range [][2]int{{-1, -1}, {-5, 30}, {80, -3}, {math.MinInt32, math.MinInt32}, {0, 0}, {0, 24}, {80, 0}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, tab := range []string{"1", "2", "3", "4"} {
			h.keys(tab)
			for _, view := range []string{"list", "detail", "help"} {
				switch view {
				case "detail":
					h.keys("enter")
				case "help":
					h.keys("esc", "?")
				}
				out := h.m.View()
				if !strings.Contains(out, "needs at least 40x10") || !strings.Contains(out, "stty rows") {
					t.Errorf("%dx%d, tab %s's %s: %q, want what it needs and how to set it", size[0], size[1], tab, view, out)
				}
			}
			h.keys("?")
		}
	}
	// Back to a real size, the dashboard draws as before.
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.keys("1")
	checkScreen(t, h.m.View(), 80, 24)
}

// Plugin strings reach the screen: escape sequences in them must not.
func TestControlCharactersAreCleaned(t *testing.T) {
	fake := fixture()
	fake.data.Events[0].Message = "evil \x1b]0;pwned\x07 title\nsecond line \u009b31m"
	h := newHarness(t, fake, Options{})
	h.keys("4")
	out := h.m.View()
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Errorf("control characters reached the screen: %q", out)
	}
	h.keys("enter")
	if out := h.m.View(); strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Errorf("control characters reached the detail: %q", out)
	}
}

func manyVolumes(n int) []engine.VolumeSummary {
	vs := make([]engine.VolumeSummary, n)
	for i := range vs {
		vs[i] = engine.VolumeSummary{ID: fmt.Sprintf("vol-%05d", i), Name: fmt.Sprintf("volume %d", i), PluginID: "hostpath",
			State: "ready", Schedulable: true, CapacityBytes: int64(i+1) << 20}
	}
	return vs
}

// Without colour the screen carries no escape sequence at all, and the selected row and the
// active tab are still told apart by text.
func TestNoColorKeepsTextCues(t *testing.T) {
	h := newHarness(t, fixture(), Options{}) // the Ascii profile, as NO_COLOR gets
	h.keys("down")
	out := h.m.View()
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences without colour: %q", out)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[3], "> mysql-1") || strings.HasPrefix(lines[2], ">") {
		t.Errorf("selected row not marked by text:\n%s", out)
	}
	if !strings.Contains(lines[0], "[1 Volumes 6]") {
		t.Errorf("active tab not marked by text: %q", lines[0])
	}
}

// The background is decided from $COLORFGBG, never by asking the terminal.
func TestDarkBackground(t *testing.T) {
	for in, want := range map[string]bool{"": true, "15;0": true, "0;15": false, "0;7": false, "12;8": true, "x": true, "0;default;7": false} {
		if got := darkBackground(in); got != want {
			t.Errorf("darkBackground(%q) = %v, want %v", in, got, want)
		}
	}
}

// The arming of q lasts as long as its message: once "q again" has left the status line, a
// single q later (the action still running) asks again instead of quitting at once.
func TestQuitArmingExpiresWithItsMessage(t *testing.T) {
	for _, expiry := range []string{"timer delivered", "frame after its time"} {
		now := testNow
		h := newHarness(t, fixture(), Options{Now: func() time.Time { return now }})
		h.keys("down", "d", "tab")
		_, action := h.m.Update(keyMsg("enter")) // the detach is out
		if _, cmd := h.m.Update(keyMsg("q")); isQuit(cmd) {
			t.Fatal("the first q quit while detaching")
		}
		now = now.Add(2*statusTTL + time.Second) // "q again" has expired
		if expiry == "timer delivered" {
			h.m.Update(statusExpiredMsg{seq: h.m.status.seq})
		}
		if _, cmd := h.m.Update(keyMsg("q")); isQuit(cmd) {
			t.Errorf("%s: a q after the \"q again\" message expired quit at once while detaching", expiry)
		}
		if out := h.m.View(); !strings.Contains(out, "q again") {
			t.Errorf("%s: the later q does not say to press it again:\n%s", expiry, out)
		}
		if _, cmd := h.m.Update(keyMsg("q")); !isQuit(cmd) {
			t.Errorf("%s: q pressed again while its message shows does not quit", expiry)
		}
		h.run(action)
	}
}

// isQuit says whether cmd quits the program.
func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}
