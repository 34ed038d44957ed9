package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
)

// agent37: the dashboard's plugin detail said "Supervised = yes" of a plugin with an exec block
// whose socket a process the agent did not start serves, which the agent probes only. It says
// "no" and shows what the agent recorded (its Supervision); one the agent runs stays "yes".
func TestPluginDetailShowsWhatTheAgentDoesWithIt(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := NewStyles(FixedRenderer(termenv.Ascii))
	probed := engine.PluginInfo{ID: "dm", Supervised: false, Supervision: &engine.Supervision{Mode: "probed", Pid: 4242,
		Note: "served by pid 4242, which no agent of this state dir started", AgentPid: 7, At: now.Add(-time.Minute)}}
	d := strings.Join(strings.Fields(pluginDetail(s, probed, now, 200)), " ")
	for _, want := range []string{"Supervised = no", "Supervision = the agent probes it only, never stopping or restarting it (pid 4242): served by pid 4242"} {
		if !strings.Contains(d, want) {
			t.Errorf("plugin detail lacks %q:\n%s", want, d)
		}
	}
	runs := engine.PluginInfo{ID: "hp", Supervised: true, Supervision: &engine.Supervision{Mode: "runs", Pid: 12, CanStop: true, CanRestart: true, At: now}}
	d = strings.Join(strings.Fields(pluginDetail(s, runs, now, 200)), " ")
	for _, want := range []string{"Supervised = yes", "Supervision = the agent runs it (pid 12)"} {
		if !strings.Contains(d, want) {
			t.Errorf("plugin detail lacks %q:\n%s", want, d)
		}
	}
}

// agent38: an agent killed with SIGKILL leaves "runs" recorded; the engine says the agent is
// gone (Supervision.AgentGone, told by the agent lock) and the detail says no agent runs it,
// not that the agent runs it.
func TestPluginDetailSaysTheAgentThatRanItIsGone(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := NewStyles(FixedRenderer(termenv.Ascii))
	gone := engine.PluginInfo{ID: "hp", Supervised: true, Supervision: &engine.Supervision{Mode: "runs", Pid: 12, AgentPid: 7, AgentGone: true, At: now.Add(-time.Hour)}}
	d := strings.Join(strings.Fields(pluginDetail(s, gone, now, 200)), " ")
	for _, want := range []string{"Supervision = no agent runs it: the agent that ran it (pid 12), pid 7, is gone", "nothing stops or restarts the process, which may still run"} {
		if !strings.Contains(d, want) {
			t.Errorf("plugin detail lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "the agent runs it") {
		t.Errorf("plugin detail says the agent runs it, whose agent is gone:\n%s", d)
	}
}
