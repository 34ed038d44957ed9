package cli

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// agent37: `plugin status` said "Supervised = yes" of a plugin declared with an exec block whose
// socket the agent found served by a process it did not start, which it probes only and never
// stops or restarts (its log and /healthz said so; plugin status, plain and --json, and the
// dashboard did not). It shows what the agent recorded: Supervised no, the Supervision line
// naming the pid and what the agent can do, --json's supervision with can_stop and can_restart
// false, and the list says it under its table. The honest case: one the agent runs is
// Supervised yes, with its pid, stop and restart.
func TestPluginStatusSaysWhatTheAgentDoesWithTheProcess(t *testing.T) {
	t.Parallel()
	h := newCLIHarness(t)
	h.registerExecOnItsSocket(t, "mem")
	// The agent that records, live: this process holding the agent lock (agent38: a record by an
	// agent that holds it no more is shown gone, TestPluginStatusSaysTheAgentOfARecordIsGone).
	release, _, err := h.e.LockAgent()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	agent := os.Getpid()
	now := func() time.Time { return time.Now().Add(3 * time.Minute) }
	const note = `its socket "/run/x.sock" was live when the agent started it, served by pid 4242, which no agent of this state dir started`
	for _, tc := range []struct {
		mode       string
		supervised bool
		detail     []string
		list       string
	}{
		{engine.SupervisionProbed, false, []string{"Supervised ", "= no", "Supervision ", "= the agent probes it only, never stopping or restarting it (pid 4242): " + note + " (recorded by the agent, pid " + strconv.Itoa(agent) + ", 3m ago)"},
			`Plugin "mem" is not supervised despite its exec block: the agent probes it only`},
		{engine.SupervisionRuns, true, []string{"Supervised ", "= yes", "Supervision ", "= the agent runs it (pid 4242)"}, ""},
	} {
		n := ""
		if tc.mode == engine.SupervisionProbed {
			n = note
		}
		if err := h.e.RecordSupervision(h.ctx, "mem", tc.mode, 4242, n, agent); err != nil {
			t.Fatal(err)
		}
		ios, _, out, _ := iostreams.Test()
		if err := pluginStatusRun(h.ctx, &PluginStatusOptions{IO: ios, Engine: h.engine, Now: now, ID: "mem"}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(tc.detail); i += 2 {
			if !lineHas(out.String(), tc.detail[i], tc.detail[i+1]) {
				t.Errorf("%s: plugin status mem: want a line %q ... %q:\n%s", tc.mode, tc.detail[i], tc.detail[i+1], out)
			}
		}
		ios, _, out, _ = iostreams.Test()
		if err := pluginStatusRun(h.ctx, &PluginStatusOptions{IO: ios, Engine: h.engine, Now: now, ID: "mem", Exporter: exportFlags{JSON: true}}); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Supervised  bool                `json:"supervised"`
			Supervision *engine.Supervision `json:"supervision"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if s := got.Supervision; got.Supervised != tc.supervised || s == nil || s.Mode != tc.mode || s.Pid != 4242 || s.CanStop != tc.supervised || s.CanRestart != tc.supervised || s.AgentPid != agent {
			t.Errorf("%s: plugin status mem --json: supervised %v, supervision %+v; want supervised %v, can_stop and can_restart %v, pids 4242 and %d:\n%s",
				tc.mode, got.Supervised, s, tc.supervised, tc.supervised, agent, out)
		}
		ios, _, out, _ = iostreams.Test()
		if err := pluginStatusRun(h.ctx, &PluginStatusOptions{IO: ios, Engine: h.engine, Now: now}); err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(out.String(), "not supervised despite its exec block"); has != (tc.list != "") || (tc.list != "" && !strings.Contains(out.String(), tc.list)) {
			t.Errorf("%s: plugin status: want %q under the table (or nothing when it is supervised):\n%s", tc.mode, tc.list, out)
		}
	}
}

// registerExecOnItsSocket registers plugin id (a new one, or the harness's "mem" again) on the
// harness's one plugin's socket, with an exec block: a plugin the agent would start.
func (h *cliHarness) registerExecOnItsSocket(t *testing.T, id string) {
	t.Helper()
	ps, err := h.e.Plugins(h.ctx)
	if err != nil || len(ps) != 1 {
		t.Fatalf("plugins: %+v, %v", ps, err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: id, Type: spec.PluginMonolith, Socket: ps[0].NodeSocket,
		Exec: &spec.Exec{Command: "/bin/true"}}); err != nil {
		t.Fatal(err)
	}
}
