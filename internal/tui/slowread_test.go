package tui

import (
	"strings"
	"testing"
	"time"
)

// dashboardCalls counts the engine's reads of the store so far.
func (f *fakeEngine) dashboardCalls() int {
	return strings.Count(strings.Join(f.Calls(), " "), "Dashboard(")
}

// TestSlowReadIsNotPiledOnAndIsSaid: the store busy (a migration, a writer holding the lock,
// a slow disk) holds a read for up to the busy timeout, 30 s. r, a probe ending and an action
// ending each started another read while one was out, every one of them waiting on the same
// lock and building every row again; and all the while the status line said "updated
// 12:00:00" as if nothing were out. Now a read asked for while one is out follows it, once,
// and a read out for seconds is said, with how long; the dashboard recovers when it returns.
func TestSlowReadIsNotPiledOnAndIsSaid(t *testing.T) {
	fake := fixture()
	now := testNow
	h := newHarness(t, fake, Options{Now: func() time.Time { return now }})

	_, out := h.m.Update(refreshTickMsg{}) // a read goes out, and does not come back yet
	reads := fake.dashboardCalls()
	h.keys("r", "r", "r")                                                                   // the user asks again, and again
	h.send(probedMsg{plugins: fake.data.Plugins})                                           // a probe ends
	h.send(actionDoneMsg{a: action{kind: actReconcile}, text: "reconciled: nothing to do"}) // an action ends
	if got := fake.dashboardCalls() - reads; got != 0 {
		t.Errorf("%d more reads of the store started while one was out; want none until it returns", got)
	}

	now = now.Add(12 * time.Second)
	h.send(refreshTickMsg{}) // the timer, re-armed: a frame is drawn
	if state := h.m.stateText(true); !strings.Contains(state, "reading for 12s") {
		t.Errorf("a read out for 12 s: the status line says %q; want it said, with how long", state)
	}

	h.run(out) // the read comes back: one more follows it, for what was asked meanwhile
	if got := fake.dashboardCalls() - reads; got != 2 {
		t.Errorf("%d reads when the slow one came back; want it and the one asked for meanwhile", got)
	}
	if state := h.m.stateText(true); strings.Contains(state, "reading for") || !strings.Contains(state, "updated 12:00:12") {
		t.Errorf("after the reads came back, the status line says %q", state)
	}
	h.send(refreshTickMsg{})
	if got := fake.dashboardCalls() - reads; got != 3 {
		t.Errorf("%d reads after the next tick; want one more", got)
	}
}
