package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// agent38: an agent killed with SIGKILL (a crash, the OOM killer) never records its stop, and
// leaves its last record of a plugin, "runs": plugin status and the dashboard said the agent
// runs a plugin that no agent runs, with can_stop and can_restart true. What the record says is
// checked against the state dir's agent lock, which the kernel drops with its holder (not the
// pid, which it may give to any process since): the agent that recorded it is said gone, and
// an agent started since is named until it records its own.
func TestSupervisionOfAKilledAgentSaysItIsGone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "ex", Type: spec.PluginMonolith, Socket: h.socket,
		Exec: &spec.Exec{Command: "/bin/true"}}); err != nil {
		t.Fatal(err)
	}
	// The agent, another process holding the agent lock as `volctl agent` does.
	lock := filepath.Join(h.dir, "locks", "agent.lock")
	ready := filepath.Join(h.dir, "agent-ready")
	// --close: flock(1) alone holds the lock, which its exit, which Wait sees, drops; its
	// command held it too, and killed with it but not waited for (its exit can take a while on
	// a loaded machine), held it on past kill: the agent was seen running still.
	agent := exec.Command("flock", "--exclusive", "--nonblock", "--close", lock, "sh", "-c", `: > "$1"; exec sleep 60`, "sh", ready)
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock(1) and its sleep, killed together
	if err := agent.Start(); err != nil {
		t.Skipf("flock(1) cannot be run to hold the agent lock from another process: %v", err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = syscall.Kill(-agent.Process.Pid, syscall.SIGKILL)
			_ = agent.Wait()
		}
	}
	t.Cleanup(kill)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) did not take the agent lock in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, known := h.e.agentLockHolders(); !known {
		t.Skip("/proc/locks cannot be read here: whether an agent holds its lock is not known, and records are shown as written")
	}
	agentPid := agent.Process.Pid
	for _, mode := range []string{store.SupervisionRuns, store.SupervisionDaemon, store.SupervisionProbed, store.SupervisionStopped} {
		if err := h.e.RecordSupervision(h.ctx, "ex", mode, 4242, "", agentPid); err != nil {
			t.Fatal(err)
		}
		s := h.supervisionOf("ex")
		if s.AgentGone || s.CanStop != (mode == store.SupervisionRuns || mode == store.SupervisionDaemon) {
			t.Errorf("%s, its agent (pid %d) holding the agent lock: %+v; want it as recorded, not gone", mode, agentPid, s)
		}
	}

	if err := h.e.RecordSupervision(h.ctx, "ex", store.SupervisionRuns, 4242, "", agentPid); err != nil {
		t.Fatal(err)
	}
	kill() // SIGKILL: no stop recorded
	s := h.supervisionOf("ex")
	if !s.AgentGone || s.CanStop || s.CanRestart || s.AgentNow != 0 {
		t.Errorf("runs, its agent (pid %d) killed: %+v; want agent_gone, neither stop nor restart, no agent now", agentPid, s)
	}
	for _, want := range []string{"no agent runs it: the agent that ran it (pid 4242), pid " + strconv.Itoa(agentPid) + ", is gone", "nothing stops or restarts the process", "the next agent on this state dir takes it up"} {
		if w := s.Words(); !strings.Contains(w, want) {
			t.Errorf("supervision says %q; want %q", w, want)
		}
	}
	// "stopped" and "left" say what the agent did at its stop, true after it.
	if err := h.e.RecordSupervision(h.ctx, "ex", store.SupervisionStopped, 4242, "", agentPid); err != nil {
		t.Fatal(err)
	}
	if s := h.supervisionOf("ex"); s.AgentGone {
		t.Errorf("stopped, its agent gone since: %+v; want it as recorded", s)
	}

	// A new agent takes the lock: named until it records its own, which is then shown as true.
	if err := h.e.RecordSupervision(h.ctx, "ex", store.SupervisionRuns, 4242, "", agentPid); err != nil {
		t.Fatal(err)
	}
	release, _, err := h.e.LockAgent()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if s := h.supervisionOf("ex"); !s.AgentGone || s.AgentNow != os.Getpid() || !strings.Contains(s.Words(), "the agent running now (pid "+strconv.Itoa(os.Getpid())+") has not recorded") {
		t.Errorf("runs by the killed agent, a new one (pid %d) holding the lock: %+v, %q; want gone, naming the new one", os.Getpid(), s, s.Words())
	}
	if err := h.e.RecordSupervision(h.ctx, "ex", store.SupervisionRuns, 4343, "", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if s := h.supervisionOf("ex"); s.AgentGone || !s.CanStop || s.Pid != 4343 {
		t.Errorf("the new agent's record: %+v; want it as recorded", s)
	}
}

// supervisionOf is plugin id's supervision as plugin status and the dashboard read it, which
// must agree.
func (h *harness) supervisionOf(id string) Supervision {
	h.t.Helper()
	ps, err := h.e.PluginStatus(h.ctx, id)
	if err != nil || len(ps) != 1 || ps[0].Supervision == nil {
		h.t.Fatalf("plugin status %s: %+v, %v", id, ps, err)
	}
	d, err := h.e.Dashboard(h.ctx, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, p := range d.Plugins {
		if p.ID == id && (p.Supervision == nil || *p.Supervision != *ps[0].Supervision) {
			h.t.Errorf("the dashboard's supervision of %s %+v; plugin status's %+v", id, p.Supervision, ps[0].Supervision)
		}
	}
	return *ps[0].Supervision
}
