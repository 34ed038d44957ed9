package agent

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// A claim reconcile cannot finish is a problem on every pass, but its message changes with the
// step that failed: during a chaos run with the state dir's disk filling, a re-drive of claim
// "v2" for alloc "c" failed at one commit, then at another, and the agent logged "reconcile:
// resolved:" for the first message in the same millisecond as the warning of the second, the
// claim still stuck. Before, a problem was known by its message alone, so any rewording read as
// a resolution; now it is known by what it is about (kind, volume, alloc), and resolved is said
// only when nothing about that is wrong any more.
func TestRewordedProblemIsNotLoggedResolved(t *testing.T) {
	var logs iostreams.SyncBuffer
	a := &Agent{log: slog.New(slog.NewTextHandler(&logs, nil)), problems: map[string]loggedProblem{}}
	first := engine.ReconcileAction{Kind: "failed", VolumeID: "v2", Alloc: "c", Message: `claim v2 for alloc c: commit: disk is full (the claim is left taken)`}
	reworded := first
	reworded.Message = `claim v2 for alloc c: NodeStageVolume: disk is full (the claim is left controller-published)`
	orphan := engine.ReconcileAction{Kind: "orphan", Message: "mount /state/publish/x/y/rw nothing accounts for"}

	a.logProblems("interval", []engine.ReconcileAction{first, orphan})
	a.logProblems("interval", []engine.ReconcileAction{reworded, orphan})
	if strings.Contains(logs.String(), "resolved") {
		t.Errorf("a problem still there under another wording was logged resolved:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), reworded.Message) {
		t.Errorf("the problem's new wording was not logged:\n%s", logs.String())
	}

	a.logProblems("interval", []engine.ReconcileAction{reworded})
	if n := strings.Count(logs.String(), "resolved"); n != 1 || !strings.Contains(logs.String(), "resolved: "+orphan.Message) {
		t.Errorf("the orphan mount gone: want it, alone, logged resolved, got %d resolved in:\n%s", n, logs.String())
	}
	a.logProblems("interval", nil)
	if !strings.Contains(logs.String(), "resolved: "+reworded.Message) {
		t.Errorf("the claim's problem gone: want it logged resolved by its last wording:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "resolved"); n != 2 {
		t.Errorf("got %d resolved lines, want 2 (the orphan, the claim):\n%s", n, logs.String())
	}
}
