package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A volume's detail is read on its own (engine.Volume), after each refresh; until that read
// answers, the detail still shows the volume as it was. A refresh that brings a claim made since
// on "scratch" (another terminal's `volume claim`, the agent) updates the lists at once, the
// detail a read later. d pressed in that window asks about the claims the detach releases, by
// their allocs. Before, it counted the claims the detail showed (none: "nothing is released")
// but released those of the lists' read (batch-7's): confirmed for nothing released, it
// unmounted the claim of an alloc the user was never shown. Found by helper review61.
func TestDetachAsksAboutTheClaimsItReleases(t *testing.T) {
	h := afterKeys(t, "down", "down", "down", "enter") // the detail of scratch: no claims
	if d := h.m.detail; d == nil || d.volume == nil || d.volume.ID != "scratch" {
		t.Fatalf("the detail of scratch is not open:\n%s", h.m.View())
	}
	// Elsewhere: alloc batch-7 claims scratch.
	h.fake.mu.Lock()
	h.fake.data.Claims = append(h.fake.data.Claims, engine.ClaimInfo{ID: 50, VolumeID: "scratch", Alloc: "batch-7",
		Mode: "write", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem, State: "published",
		CreatedAt: testNow, UpdatedAt: testNow})
	h.fake.data.Volumes[3].WriteClaims = 1
	h.fake.mu.Unlock()
	// The refresh lands; the detail's own read of scratch, which follows it, is still out.
	_, _ = h.m.Update(h.m.live.read()())
	h.keys("d")
	if h.m.dialog == nil {
		t.Fatalf("d in the detail of scratch opened no question; status %q", h.m.status.text)
	}
	question := h.m.dialog.a.question()
	h.keys("tab", "enter")
	released := false
	for _, c := range actionCalls(h.fake.Calls()) {
		released = released || c == "Detach(scratch, false)"
	}
	if !released {
		t.Fatalf("the detach confirmed released nothing; status %q", h.m.status.text)
	}
	if !strings.Contains(question, `The claim of "batch-7" on this host is released`) {
		t.Errorf("detach confirmed on the question %q released alloc batch-7's claim on scratch, which the question did not count and the detail did not show (status %q)",
			question, h.m.status.text)
	}
}

// A release waits on its plugin for up to CSI's long timeout at each attempt, minutes on one
// that hangs, and all that while the status line is the spinner's: that the dashboard's reads
// fail stays on it, at any width, the action's words cut. Before, the dashboard's own state
// went on its right only when both fit; at 80 columns they did not, so for as long as the
// action ran the lists were drawn as if fresh while every read failed. Found by helper review61.
func TestReadFailureIsSaidWhileAnActionRuns(t *testing.T) {
	now := testNow
	h := newHarness(t, fixture(), Options{Now: func() time.Time { return now }})
	h.keys("2", "x", "tab")
	_, _ = h.m.Update(keyMsg("enter")) // the release goes out, and its plugin does not answer
	if h.m.status.running == nil {
		t.Fatalf("no action running; status %q", h.m.status.text)
	}
	h.fake.mu.Lock()
	h.fake.dashErr = errors.New("open /var/lib/volctl/volctl.db: permission denied")
	h.fake.mu.Unlock()
	now = now.Add(95 * time.Second)
	h.send(refreshTickMsg{}) // every read fails from now on
	if h.m.live.err == nil {
		t.Fatal("the failing read was not taken")
	}
	for _, w := range []int{80, 120, 160} {
		h.send(tea.WindowSizeMsg{Width: w, Height: 24})
		out := h.m.View()
		lines := strings.Split(out, "\n")
		if !strings.Contains(out, "read failed") {
			t.Errorf("at %d columns, while a release runs, reads of the state fail and the screen does not say so; status line:\n%s", w, lines[len(lines)-2])
		}
	}
}
