package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestHeirOfAPluginDeregisteredWhileNoAgentRanAdoptsItsProcess: two plugin IDs on one socket,
// both with the exec block; a ran the process, b had a volume with a claim. The agent stopped,
// leaving the process under b's mounts, recorded in run/a.pid, and a was deregistered while no
// agent ran. The next agent's runner for b took the process for "a plugin no volctl agent
// started", probed only, never stopped or restarted, where a running agent's retire hands it
// over (plugin-handover). It is handed over and adopted, and stopped at a clean stop once the
// mounts are gone. Found by helper review72.
func TestHeirOfAPluginDeregisteredWhileNoAgentRanAdoptsItsProcess(t *testing.T) {
	f := newFixture(t)
	f.mountsForReal()
	a := f.execPlugin("a", "sickens")
	b := a
	b.ID = "b"
	f.register(a)
	stop := f.startAgent(testSettings)
	waitFor(t, "plugin a to be healthy", func() bool { return f.plugin("a").Healthy })
	f.register(b)
	waitFor(t, "both plugin IDs to be healthy", func() bool { return f.plugin("a").Healthy && f.plugin("b").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "b", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	cmd := f.claimAsCommand()
	pid := f.pid("a")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) || f.pid("a") != pid {
		t.Fatalf("the socket's process (pid %d, alive %v) was not left running under plugin b's mounts, recorded as a's (pid file %d)", pid, alive(pid), f.pid("a"))
	}
	// No agent runs: a, which has no volumes, is deregistered.
	if err := cmd.DeregisterPlugin(f.ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	before := len(f.logs.String())
	stop2 := f.startAgent(testSettings)
	waitFor(t, "plugin b's runner to take the socket's process one way or another", func() bool {
		logs := f.logs.String()[before:]
		return strings.Contains(logs, "no volctl agent started it") || strings.Contains(logs, `adopted the running plugin" plugin=b`) ||
			strings.Contains(logs, "was deregistered while no agent ran") ||
			strings.Contains(logs, `started plugin" plugin=b`)
	})
	waitFor(t, "plugin b's supervision to be recorded by the second agent", func() bool {
		s := f.plugin("b").Supervision
		return s != nil && s.Mode != engine.SupervisionLeft && s.Mode != engine.SupervisionStopped
	})
	logs := f.logs.String()[before:]
	if strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the second agent took the process the first one started for plugin a (pid %d), which serves plugin b's mounts, for a plugin no agent started: probed only, never stopped or restarted", pid)
	}
	if p := f.plugin("b"); !p.Supervised || p.Supervision.Mode == engine.SupervisionProbed {
		t.Errorf("plugin b: supervised %v, supervision %+v; want the agent to run (adopt) pid %d", p.Supervised, p.Supervision, pid)
	}
	if got := f.pid("b"); got != pid {
		t.Errorf("plugin b's pid file names %d, want the socket's process %d, which the agent started", got, pid)
	}
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("%s", fmt.Sprintf("the socket's process (pid %d) runs on after the second agent's clean stop with no mounts left: nothing supervises it", pid))
	}
}

// TestPluginStoppedPastItsHealthTimeoutIsNotRecordedAsRunning: a plugin the agent stopped past
// its health timeout stayed recorded "runs", naming the pid just killed, for the whole backoff
// before the restart (and after an agent stop in it), where an exit is recorded "exited" and a
// failed start "start-failed": docs/architecture.md, "While no process runs, it records why".
// Found by helper review72.
func TestPluginStoppedPastItsHealthTimeoutIsNotRecordedAsRunning(t *testing.T) {
	f := newFixture(t)
	clock := &fakeClock{t: time.Now()}
	f.now = clock.Now
	f.register(f.execPlugin("sick", "unhealthy"))
	s := testSettings
	s.HealthTimeout = 300 * time.Millisecond
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	_, stop := f.startAgentWith(func(c *Config) {
		c.Settings = s
		c.restartWait = func(ctx context.Context, d time.Duration) bool {
			if d > 0 { // the backoff before a restart: held until the test lets it go
				select {
				case <-hold:
				case <-ctx.Done():
				}
			}
			return ctx.Err() == nil
		}
	})
	waitFor(t, "the plugin to be started", func() bool { return alive(f.pid("sick")) })
	first := f.pid("sick")
	waitFor(t, "the agent to probe the plugin unhealthy", func() bool {
		return strings.Contains(f.plugin("sick").LastError, "Probe: Internal")
	})
	waitFor(t, "the runner's record of the process", func() bool {
		sv := f.plugin("sick").Supervision
		return sv != nil && sv.Mode == engine.SupervisionRuns && sv.Pid == first
	})
	clock.Advance(301 * time.Millisecond)
	waitFor(t, "the unhealthy plugin to be stopped for its restart", func() bool { return len(f.events("plugin-restart")) > 0 && !alive(first) })
	time.Sleep(300 * time.Millisecond) // a few probe intervals: whatever the runner records, it has
	if p := f.plugin("sick"); p.Supervision != nil && p.Supervision.Mode == engine.SupervisionRuns && p.Supervision.Pid == first {
		t.Errorf("while the agent waits to restart the plugin it stopped (pid %d, gone), plugin status says the agent runs it: supervised %v, %+v", first, p.Supervised, *p.Supervision)
	}
	release()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
