package engine

import (
	"os"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// agent39: a plugin ID registered without an exec block on the socket of one whose process the
// agent runs has that process's record (the agent's noteMates): Supervised says so while the
// agent that recorded it holds the agent lock, and no longer once it is gone, when no exec
// block says an agent would run it again. Without a record it is not supervised (the honest
// case, a plugin some other supervisor runs).
func TestSupervisedOfAnIDWithoutAnExecBlockFollowsItsSocketsRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "nx", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		t.Fatal(err)
	}
	supervised := func() (bool, *Supervision) {
		t.Helper()
		ps, err := h.e.PluginStatus(h.ctx, "nx")
		if err != nil || len(ps) != 1 {
			t.Fatalf("plugin status nx: %+v, %v", ps, err)
		}
		return ps[0].Supervised, ps[0].Supervision
	}
	if on, s := supervised(); on || s != nil {
		t.Errorf("nx, no exec block, nothing recorded: supervised %v, %+v; want not supervised", on, s)
	}
	release, _, err := h.e.LockAgent() // this process is the agent
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.RecordSupervision(h.ctx, "nx", store.SupervisionRuns, 4242, `one process serves its socket and plugin "ex"'s`, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if on, s := supervised(); !on || s == nil || s.AgentGone || !s.CanStop {
		t.Errorf("nx, its socket's process run by the agent holding the lock: supervised %v, %+v; want supervised", on, s)
	}
	release()
	if on, s := supervised(); on || s == nil || !s.AgentGone || s.CanStop {
		t.Errorf("nx once the agent that ran its socket's process is gone: supervised %v, %+v; want not supervised, agent gone", on, s)
	}
	if err := h.e.RecordSupervision(h.ctx, "nx", store.SupervisionStopped, 4242, "", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if on, _ := supervised(); on {
		t.Errorf("nx, its socket's process stopped: supervised; want not")
	}
}
