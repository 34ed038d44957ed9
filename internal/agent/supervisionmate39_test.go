package agent

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// agent39: a second plugin ID registered on a socket without an exec block (`plugin register
// --id b --socket <a's socket>`) is served by the process the agent runs for the first ID, but
// only IDs declared with an exec block were its mates (noteMates): b had no supervision record,
// and plugin status said "Supervised: no" of a plugin whose process the agent runs, stops and
// restarts. Now its record says the agent runs the process as a's, and Supervised is true; at
// the agent's stop it says the process was stopped.
func TestPluginStatusSaysTheAgentRunsTheProcessOfAnIDWithoutAnExecBlockOnItsSocket(t *testing.T) {
	f := newFixture(t)
	a := f.execPlugin("a", "hostpath")
	f.register(a)
	stop := f.startAgent(testSettings)
	pa := f.supervisionOf("a", engine.SupervisionRuns)
	waitFor(t, "plugin a to be healthy", func() bool { return f.plugin("a").Healthy })
	b := a
	b.ID, b.Exec = "b", nil
	f.register(b) // on a socket that must answer: a's process serves it
	pb := f.supervisionOf("b", engine.SupervisionRuns)
	s := pb.Supervision
	if s.Pid != pa.Supervision.Pid || !s.CanStop || !s.CanRestart || !pb.Supervised {
		t.Errorf("plugin b, served by plugin a's process (pid %d): supervised %v, supervision %+v; want it run by the agent, that pid",
			pa.Supervision.Pid, pb.Supervised, s)
	}
	if w := s.Words(); !strings.Contains(w, `one process serves its socket and plugin "a"'s, which the agent runs as "a"'s`) {
		t.Errorf("plugin b's supervision says %q; want it to name plugin a, whose process serves it", w)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if p := f.plugin("b"); p.Supervision == nil || p.Supervision.Mode != engine.SupervisionStopped || p.Supervision.Pid != pa.Supervision.Pid || p.Supervised {
		t.Errorf("plugin b after the agent's stop: supervised %v, %+v; want stopped, pid %d (plugin a's process, stopped), not supervised",
			p.Supervised, p.Supervision, pa.Supervision.Pid)
	}
}
