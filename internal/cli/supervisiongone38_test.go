package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// agent38: an agent killed with SIGKILL leaves its record of a plugin, "runs", and plugin status
// said "the agent runs it (pid 4242); it stops it at its own stop and restarts it", can_stop and
// can_restart true in --json, with no agent running on the state dir. It says the agent that
// ran it is gone (no process holds the agent lock), plain, --json (agent_gone) and under the
// list's table. The live agent's record (TestPluginStatusSaysWhatTheAgentDoesWithTheProcess)
// is still shown as it was written.
func TestPluginStatusSaysTheAgentOfARecordIsGone(t *testing.T) {
	t.Parallel()
	h := newCLIHarness(t)
	h.registerExecOnItsSocket(t, "ex")
	// The agent, pid 77, recorded that it runs pid 4242, and was killed: nothing holds the agent lock.
	if err := h.e.RecordSupervision(h.ctx, "ex", engine.SupervisionRuns, 4242, "", 77); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Now().Add(3 * time.Minute) }
	const gone = "no agent runs it: the agent that ran it (pid 4242), pid 77, is gone"

	ios, _, out, _ := iostreams.Test()
	if err := pluginStatusRun(h.ctx, &PluginStatusOptions{IO: ios, Engine: h.engine, Now: now, ID: "ex"}); err != nil {
		t.Fatal(err)
	}
	if !lineHas(out.String(), "Supervision ", "= "+gone) || strings.Contains(out.String(), "the agent runs it") {
		t.Errorf("plugin status ex: want a line Supervision ... %q, and no %q:\n%s", gone, "the agent runs it", out)
	}

	ios, _, out, _ = iostreams.Test()
	if err := pluginStatusRun(h.ctx, &PluginStatusOptions{IO: ios, Engine: h.engine, Now: now, ID: "ex", Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Supervision map[string]any `json:"supervision"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if s := got.Supervision; s["mode"] != "runs" || s["can_stop"] != false || s["can_restart"] != false || s["agent_gone"] != true || s["agent_pid"] != float64(77) {
		t.Errorf("plugin status ex --json: supervision %v; want mode runs, can_stop and can_restart false, agent_gone true, agent_pid 77:\n%s", s, out)
	}

	ios, _, out, _ = iostreams.Test()
	if err := pluginStatusRun(h.ctx, &PluginStatusOptions{IO: ios, Engine: h.engine, Now: now}); err != nil {
		t.Fatal(err)
	}
	if want := `Plugin "ex": ` + gone; !strings.Contains(out.String(), want) {
		t.Errorf("plugin status: want %q under the table:\n%s", want, out)
	}
}
