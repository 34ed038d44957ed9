package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// A plugin whose command the agent cannot start is recorded so: plugin status (its
// Supervision line, its health's why, and the dashboard's, all from these) says the agent cannot
// start it and why, and once the agent stops, that it stopped with the plugin not running.
// Before, nothing was recorded: plugin status said "Supervised: yes" and "socket ... does not
// exist (is the plugin running?)", only the agent's log saying why not.
func TestPluginStatusSaysWhyTheAgentCannotStartThePlugin(t *testing.T) {
	f := newFixture(t)
	f.registerBroken()
	stop := f.startAgent(testSettings)
	waitFor(t, "the failed start to be recorded", func() bool {
		s := f.plugin("broken").Supervision
		return s != nil && s.Mode == engine.SupervisionStartFailed
	})
	p := f.plugin("broken")
	words := p.Supervision.Words()
	for _, w := range []string{"the agent cannot start it", filepath.Join(f.dir, "no-such-plugin"), "no such file or directory", "tries again"} {
		if !strings.Contains(words, w) {
			t.Errorf("supervision %q does not say %q", words, w)
		}
	}
	if !p.Supervised || p.Supervision.CanStop || !p.Supervision.CanRestart || p.Supervision.Pid != 0 {
		t.Errorf("supervised %v, can stop %v, can restart %v, pid %d: want supervised, no process to stop, started again",
			p.Supervised, p.Supervision.CanStop, p.Supervision.CanRestart, p.Supervision.Pid)
	}
	// Probed by plugin status, the socket is not there: its why says what the agent found.
	ps, err := f.e.PluginStatus(f.ctx, "broken")
	if err != nil || len(ps) != 1 || ps[0].Healthy {
		t.Fatalf("plugin status of a plugin that never started: %+v, %v", ps, err)
	}
	if why := ps[0].HealthWhy(); !strings.Contains(why, "does not exist") || !strings.Contains(why, "the agent cannot start it: ") {
		t.Errorf("health why = %q, want the probe's error and the agent's failed start", why)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	p = f.plugin("broken")
	if s := p.Supervision; s == nil || s.Mode != engine.SupervisionStopped || !strings.Contains(s.Words(), "the plugin was not running: its last start failed") {
		t.Errorf("after the agent's stop, supervision = %+v, want stopped, saying the plugin was not running", s)
	}
	if why := p.HealthWhy(); strings.Contains(why, "the agent cannot start it") {
		t.Errorf("with the agent stopped, health why still says it starts the plugin: %q", why)
	}
}

// A plugin whose process exits at once is recorded as exited, with its exit status and where
// its output is, not as a process the agent runs. Before, the record kept "the agent runs it
// (pid N)" of a pid that had exited.
func TestPluginStatusSaysThePluginsProcessExited(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("quits", "exits-at-once"))
	stop := f.startAgent(testSettings)
	// The record as the wait found it: read again, the agent may have started the plugin
	// again meanwhile (it does, after its backoff), the record then saying it runs it.
	s := f.plugin("quits").Supervision
	waitFor(t, "the exit to be recorded", func() bool {
		s = f.plugin("quits").Supervision
		return s != nil && s.Mode == engine.SupervisionExited
	})
	log := filepath.Join(f.dir, "logs", "quits.log")
	for _, w := range []string{"its process (pid ", ") exited: exit status 3", "its output is in " + log, "starts it again"} {
		if !strings.Contains(s.Words(), w) {
			t.Errorf("supervision %q does not say %q", s.Words(), w)
		}
	}
	if s.Pid == 0 || alive(s.Pid) || s.CanStop || !s.CanRestart {
		t.Errorf("pid %d (alive %v), can stop %v, can restart %v: want the pid that exited, nothing to stop, started again",
			s.Pid, s.Pid != 0 && alive(s.Pid), s.CanStop, s.CanRestart)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Stopped between two starts or while one runs: either the plugin was not running, or the
	// agent stopped the process it ran.
	if s := f.plugin("quits").Supervision; s == nil || s.Mode != engine.SupervisionStopped {
		t.Errorf("after the agent's stop, supervision = %+v, want stopped", s)
	}
}
