package tui

import (
	"strings"
	"testing"
	"time"
)

// An action's result shows in the status line for a few seconds, then goes: it does not stay
// in every view for minutes. A newer message is not cleared by the older one's timer.
func TestStatusMessageExpires(t *testing.T) {
	now := testNow
	h := newHarness(t, fixture(), Options{Now: func() time.Time { return now }})
	h.keys("down", "d", "l", "enter")
	const msg = `detached "mysql-1": released 1 claim`
	if out := h.m.View(); !strings.Contains(out, msg) {
		t.Fatalf("after the detach the status line lacks %q:\n%s", msg, out)
	}
	if !slicesContain(h.timers.scheduled, statusTTL) {
		t.Errorf("no expiry timer armed: %v", h.timers.scheduled)
	}
	h.keys("2") // another view: still there while fresh
	if out := h.m.View(); !strings.Contains(out, msg) {
		t.Errorf("the message left before its time:\n%s", out)
	}

	now = now.Add(statusTTL + time.Second) // the frame after its time, timer not yet delivered
	if out := h.m.View(); strings.Contains(out, msg) {
		t.Errorf("%s later the status line still says %q:\n%s", statusTTL+time.Second, msg, out)
	}
	h.send(statusExpiredMsg{seq: h.m.status.seq})
	if h.m.status.text != "" {
		t.Errorf("the expiry timer left %q", h.m.status.text)
	}

	// An older timer does not clear a newer message.
	h.keys("1", "x") // release needs a claim: an error in the status line
	h.send(statusExpiredMsg{seq: h.m.status.seq - 1})
	if !h.m.status.shown() {
		t.Error("an older message's timer cleared the newer one")
	}
}

func slicesContain(ds []time.Duration, d time.Duration) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}
