package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"
)

// The screens, drawn at 40x24 (the narrowest the dashboard draws), 80x24, 100x30, 120x40 and 200x50, without colour (what NO_COLOR gets) and with 256
// colours. `go test ./internal/tui -run TestViewGolden -update` rewrites them; review the diff
// like code.
func TestViewGolden(t *testing.T) {
	screens := []struct {
		name string
		keys []string
		opts Options
		fail bool // the engine refuses with a long error
		cold bool // the first frame, before the first read has arrived
		edit func(*fakeEngine)
	}{
		{name: "loading", cold: true},
		{name: "volumes"},
		{name: "claims", keys: []string{"2", "down", "down"}},
		{name: "plugins", keys: []string{"3"}},
		{name: "events", keys: []string{"4"}},
		{name: "groups", keys: []string{"5"}},
		{name: "group-detail", keys: []string{"5", "end", "enter"}},
		{name: "volume-detail", keys: []string{"enter"}},
		{name: "volume-detail-end", keys: []string{"enter", "G"}},
		// scratch, recorded attached with no claim: a forced detach could not send
		// ControllerUnpublishVolume.
		{name: "volume-detail-owed", keys: []string{"down", "down", "down", "enter"}, edit: func(f *fakeEngine) {
			v := f.volumes["scratch"]
			v.AttachedTo = "node-1"
			f.volumes["scratch"] = v
		}},
		{name: "claim-detail", keys: []string{"2", "end", "enter"}},
		{name: "plugin-detail", keys: []string{"3", "enter"}},
		{name: "help", keys: []string{"?"}},
		{name: "confirm-release", keys: []string{"2", "x"}},
		{name: "confirm-delete", keys: []string{"down", "down", "down", "D"}},
		{name: "delete-refused", keys: []string{"down", "down", "D"}},
		{name: "confirm-force-detach", keys: []string{"enter", "F"}},
		{name: "confirm-reconcile", keys: []string{"R"}},
		{name: "readonly-action", keys: []string{"x"}, opts: Options{ReadOnly: true}},
		{name: "filter", keys: []string{"/", "m", "y", "s"}},
		{name: "sorted", keys: []string{"s", "s", "s", "S"}},
		{name: "readonly", opts: Options{ReadOnly: true}},
		{name: "confirm-detach", keys: []string{"down", "d"}},
		{name: "action-failed", keys: []string{"4", "2", "x", "tab", "enter"}, fail: true},
	}
	profiles := []struct {
		name    string
		profile termenv.Profile
	}{{"ascii", termenv.Ascii}, {"ansi256", termenv.ANSI256}}
	for _, size := range [][2]int{{40, 24}, {80, 24}, {100, 30}, {120, 40}, {200, 50}} {
		for _, p := range profiles {
			for _, sc := range screens {
				t.Run(fmt.Sprintf("%dx%d/%s/%s", size[0], size[1], p.name, sc.name), func(t *testing.T) {
					opts := sc.opts
					opts.Renderer = FixedRenderer(p.profile)
					fake := fixture()
					if sc.edit != nil {
						sc.edit(fake)
					}
					if sc.fail {
						fake.releaseErr = fmt.Errorf("release volume %q for alloc %q: NodeUnpublishVolume: FailedPrecondition: "+
							"target is busy: a process still has files open under the target (stop it, then release again)", "mysql-0", "web[0]")
					}
					var out string
					if sc.cold {
						opts.Engine, opts.Now = fake, func() time.Time { return testNow }
						m := New(context.Background(), opts)
						m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
						out = m.View()
					} else {
						h := newHarness(t, fake, opts)
						h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
						h.keys(sc.keys...)
						out = h.m.View()
					}
					checkScreen(t, out, size[0], size[1])
					golden.RequireEqual(t, out)
				})
			}
		}
	}
}

// checkScreen asserts what every frame must be: exactly the terminal's size, no line wider,
// and no secret.
func checkScreen(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, lw, w, ansi.Strip(l))
		}
	}
	for _, s := range fixtureSecrets {
		if strings.Contains(out, s) {
			t.Errorf("screen shows secret %q", s)
		}
	}
}
