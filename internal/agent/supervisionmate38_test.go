package agent

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// agent38: two plugin IDs declared with one exec block on one socket are one process, run by the
// first ID's runner (oneProcessPerSocket); the second's runner probes it only and recorded
// nothing, so plugin status said of it "Supervised: yes" from its exec block, with no
// Supervision line: nothing said which process serves it or that the agent runs it as the
// first's. The first's runner records the second's supervision with its own, naming it, and at
// its stop records the second's stop too.
func TestPluginStatusSaysWhoRunsTheProcessOfASecondIDOnOneSocket(t *testing.T) {
	f := newFixture(t)
	a := f.execPlugin("a", "hostpath")
	b := a
	b.ID = "b"
	f.register(a)
	f.register(b)
	stop := f.startAgent(testSettings)
	pa := f.supervisionOf("a", engine.SupervisionRuns)
	// The first's runner records the second's before its own: by now, it is there.
	pb := f.plugin("b")
	s := pb.Supervision
	if s == nil || s.Mode != engine.SupervisionRuns || s.Pid != pa.Supervision.Pid || !s.CanStop || !s.CanRestart || !pb.Supervised {
		t.Fatalf("plugin b, served by plugin a's process (pid %d): supervised %v, supervision %+v; want it run by the agent, that pid",
			pa.Supervision.Pid, pb.Supervised, s)
	}
	if w := s.Words(); !strings.Contains(w, `one process serves its socket and plugin "a"'s, which the agent runs as "a"'s`) {
		t.Errorf("plugin b's supervision says %q; want it to name plugin a, whose process serves it", w)
	}
	if pa := f.plugin("a").Supervision; pa == nil || strings.Contains(pa.Note, `plugin "a"'s`) {
		t.Errorf("plugin a's own supervision %+v names itself as the process's owner", pa)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := f.plugin("b").Supervision; s == nil || s.Mode != engine.SupervisionStopped || s.Pid != pa.Supervision.Pid {
		t.Errorf("plugin b after the agent's stop: %+v; want stopped, pid %d (plugin a's process, stopped)", s, pa.Supervision.Pid)
	}
}
