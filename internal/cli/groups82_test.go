package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/tui"
)

// colourDashboard draws the dashboard on the harness's engine with colour on (a true-colour
// terminal), its commands run to quiescence and its timers never fired, these keys typed in
// turn, and returns the last frame.
func colourDashboard(t *testing.T, h *cliHarness, width, height int, keys ...tea.KeyMsg) string {
	t.Helper()
	r := lipgloss.NewRenderer(&strings.Builder{})
	r.SetColorProfile(termenv.TrueColor)
	r.SetHasDarkBackground(true)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var m tea.Model = tui.New(ctx, tui.Options{Engine: h.e, Renderer: r,
		After: func(time.Duration, func() tea.Msg) tea.Cmd { return nil }})
	run := func(cmd tea.Cmd) {
		queue := []tea.Cmd{cmd}
		for steps := 0; len(queue) > 0; steps++ {
			if steps > 1000 {
				t.Fatal("the dashboard's commands do not settle")
			}
			c := queue[0]
			queue = queue[1:]
			if c == nil {
				continue
			}
			switch msg := c().(type) {
			case nil, tea.QuitMsg:
			case tea.BatchMsg:
				queue = append(queue, msg...)
			default:
				var next tea.Cmd
				m, next = m.Update(msg)
				queue = append(queue, next)
			}
		}
	}
	send := func(msg tea.Msg) {
		var next tea.Cmd
		m, next = m.Update(msg)
		run(next)
	}
	send(tea.WindowSizeMsg{Width: width, Height: height})
	run(m.Init())
	for _, k := range keys {
		send(k)
	}
	return m.View()
}

// TestDashboardGroupRowOfAnAllocCutShortIsNotDrawnAsAllWell: group "api"'s alloc api[0] holds
// its claim of data and lacks its claim of logs, as a run killed between the alloc's two claims
// leaves it, with no run error recorded (the run never reached its end). `volctl group status`
// says so: "Allocs Ready 0/1", logs "missing (a run cut short: ...)". The dashboard's groups
// view draws api's row as it draws a healthy group's: state "running", LAST ERROR empty, in the
// normal tone (tui.groupRows tones a row only by its allocs' Error and its state; a cut-short
// alloc has Missing set and no Error). The one at-a-glance place that shows groups tells the
// user the group is fine while its alloc lacks a volume. Correct: a row with an alloc that is
// not ready (a volume missing, a claim not at rest, claims past the count) is drawn as wanting
// a look (warn), as the claims view tones a claim that is not at rest.
// Found by helper review82 (groups).
func TestDashboardGroupRowOfAnAllocCutShortIsNotDrawnAsAllWell(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	h.createVolume(t, "logs", spec.MultiNodeMultiWriter)
	h.createVolume(t, "www", spec.MultiNodeMultiWriter)
	if _, err := h.e.RunGroup(h.ctx, apiGroup(t, "data", "logs")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(context.Background(), "api") })
	web, diags := spec.NewParser().ParseGroup("web.hcl", []byte(`group "web" {
  volume "w" {
    type            = "csi"
    source          = "www"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
}
`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, err := h.e.RunGroup(h.ctx, *web); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(context.Background(), "web") })
	// What a run killed after the alloc's first claim leaves: that claim alone.
	if _, err := h.e.Release(h.ctx, "logs", "api[0]"); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := h.runReported("group", "status", "api"); !regexp.MustCompile(`(?m)^Allocs Ready += 0/1$`).MatchString(out) || !strings.Contains(out, "missing") {
		t.Fatalf("group status api does not say api[0] lacks logs (the precondition):\n%s", out)
	}
	// The groups view (5), the cursor moved off api's row (j) onto web's, so that api's row is
	// drawn in its own tone.
	frame := colourDashboard(t, h, 160, 30, runes("5"), runes("j"))
	var apiRow, webRow string
	for _, line := range strings.Split(frame, "\n") {
		plain := stripANSI(line)
		switch {
		case regexp.MustCompile(`^\W*api\s+running\b`).MatchString(plain):
			apiRow = line
		case regexp.MustCompile(`^\W*web\s+running\b`).MatchString(plain):
			webRow = line
		}
	}
	if apiRow == "" || webRow == "" {
		t.Fatalf("the groups view does not list api and web (the precondition):\n%s", frame)
	}
	if !strings.Contains(webRow, "\x1b[") {
		t.Fatalf("web's row, under the cursor, is not drawn selected (the precondition): %q", webRow)
	}
	if !strings.Contains(apiRow, "\x1b[") {
		t.Errorf("the dashboard draws group api's row in the normal tone, as all well: %q\n"+
			"while `volctl group status api` says Allocs Ready 0/1, api[0] missing logs; want the row to want a look (warn)", stripANSI(apiRow))
	}
}

var ansiSeq = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

func stripANSI(s string) string { return ansiSeq.ReplaceAllString(s, "") }
