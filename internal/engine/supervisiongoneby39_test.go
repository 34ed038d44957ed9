package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// agent39: a record whose agent is gone (agent_gone) said nothing of when it went. Its death is
// recorded nowhere (SIGKILL leaves no trace, flock(2) does not touch the lock file), so what is
// said is what is known: it was alive at the record's time, and, once another agent holds the
// lock, gone by the time that agent wrote run/agent.pid, which it does only after taking the
// lock the kernel gave it only once the other was dead (agent_gone_by). A pid file that does not
// name the agent holding the lock (the killed agent's, left behind) says nothing.
func TestSupervisionOfAGoneAgentSaysWhenItWasGoneBy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "ex", Type: spec.PluginMonolith, Socket: h.socket,
		Exec: &spec.Exec{Command: "/bin/true"}}); err != nil {
		t.Fatal(err)
	}
	release, _, err := h.e.LockAgent() // this process: the agent running now
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, known := h.e.agentLockHolders(); !known {
		t.Skip("/proc/locks cannot be read here: whether an agent holds its lock is not known, and records are shown as written")
	}
	const killed = 4194311 // above the kernel's largest pid_max: an agent no process is now
	if err := h.e.RecordSupervision(h.ctx, "ex", store.SupervisionRuns, 4242, "", killed); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(h.dir, "run", "agent.pid")
	if err := os.MkdirAll(filepath.Dir(pidFile), 0o700); err != nil {
		t.Fatal(err)
	}
	took := time.Date(2026, 12, 2, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, pidFile string // "" for none
		goneBy        time.Time
		says          string
	}{
		{"no pid file", "", time.Time{}, "it was alive when it made this record, and when it died is not recorded)"},
		{"the killed agent's pid file", strconv.Itoa(killed), time.Time{}, "when it died is not recorded)"},
		{"the agent now's pid file", strconv.Itoa(os.Getpid()), took, "when it died is not recorded, but it was gone by the time the agent running now took the lock)"},
	} {
		_ = os.Remove(pidFile)
		if tc.pidFile != "" {
			if err := os.WriteFile(pidFile, []byte(tc.pidFile+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(pidFile, took, took); err != nil {
				t.Fatal(err)
			}
		}
		s := h.supervisionOf("ex")
		if !s.AgentGone || s.AgentNow != os.Getpid() || !s.AgentGoneBy.Equal(tc.goneBy) {
			t.Errorf("%s: %+v; want gone, the agent now pid %d, gone by %v", tc.name, s, os.Getpid(), tc.goneBy)
		}
		if w := s.Words(); !strings.Contains(w, tc.says) {
			t.Errorf("%s: supervision says %q; want %q", tc.name, w, tc.says)
		}
	}
}
