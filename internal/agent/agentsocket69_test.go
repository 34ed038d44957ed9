package agent

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A second plugin ID registered, with the same exec block, on the socket of a supervised plugin
// that holds mounts, whose ID sorts before the running one's: oneProcessPerSocket makes the new
// ID the socket's owner and the running ID a mate (its exec block dropped). The running
// process serves both IDs and the mounts: it must stay supervised (handed to the new owner, as
// at a deregistration), not be said "registered again without an exec block" of a plugin whose
// exec block never changed, nor be taken by the new owner's runner for a plugin no agent
// started, probed only, so that nothing restarts it when it crashes. It was all three (and,
// without mounts, stopped and started again). Found by helper review69.
func TestNewFirstIDOnASocketUnderMountsKeepsItsProcessSupervised(t *testing.T) {
	f := newFixture(t)
	f.mountsForReal()
	b := f.execPlugin("b", "sickens")
	f.register(b)
	stop := f.startAgent(testSettings)
	waitFor(t, "plugin b to be healthy", func() bool { return f.plugin("b").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "b", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	cmd := f.claimAsCommand()
	pid := f.pid("b")

	a := b // the same exec block, the same socket: one process serves both (docs)
	a.ID = "a"
	f.register(a)
	waitFor(t, "plugin a's runner to take up the socket's process one way or another", func() bool {
		logs := f.logs.String()
		return strings.Contains(logs, `plugin=a`) && (strings.Contains(logs, "no volctl agent started it") ||
			strings.Contains(logs, `adopted the running plugin" plugin=a`) || strings.Contains(logs, `started plugin" plugin=a`) ||
			len(f.events("plugin-handover")) > 0)
	})
	waitFor(t, "plugin a to be healthy", func() bool { return f.plugin("a").Healthy })
	// Registered on a healthy socket, a is fingerprinted healthy at once: its runner records
	// its supervision as it adopts the process, a moment later (CI met the read before it).
	waitFor(t, "plugin a's supervision to be recorded", func() bool { return f.plugin("a").Supervision != nil })
	if !alive(pid) {
		t.Fatalf("the socket's process (pid %d) was stopped under plugin b's mounts", pid)
	}
	logs := f.logs.String()
	if strings.Contains(logs, `plugin \"b\" was registered again without an exec block`) {
		t.Errorf("the agent says plugin b was registered again without an exec block; b's declaration never changed, plugin a was registered on its socket")
	}
	if strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("plugin a's runner takes the agent's own process (pid %d) for a plugin no agent started: probed only, never restarted", pid)
	}
	if s := f.plugin("a").Supervision; s == nil || s.Mode == engine.SupervisionProbed || !s.CanRestart {
		t.Errorf("plugin a's supervision = %+v; want the agent to run (and restart) the socket's process pid %d", s, pid)
	}
	if s := f.plugin("b").Supervision; s == nil || !s.CanRestart {
		t.Errorf("plugin b's supervision = %+v; want the agent to run (and restart) the socket's process pid %d", s, pid)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(fmt.Errorf("release: %w", err))
	}
}

// /healthz's plugins[].restarts is "restarts by this agent" (docs/json.md), and
// volctl_plugin_restarts_total counts the same restarts. A plugin registered again with only
// its timeout changed keeps its process (TestAgentKeepsThePluginRunningWhenOnlyItsTimeoutChanges),
// but the new runner started its count at 0: /healthz then said the agent never restarted a
// plugin it restarted, while the metric (same agent, same plugin) still said it did. Found by
// helper review69.
func TestHealthzRestartsSurviveARedeclaration(t *testing.T) {
	f, rec, sp, ag, stop := recordedHealthyPlugin(t)
	restarts := func() int {
		for _, p := range ag.Status().Plugins {
			if p.ID == "hp" {
				return p.Restarts
			}
		}
		return -1
	}
	first := f.pid("hp")
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restart after the kill", func() bool {
		p := f.pid("hp")
		return restarts() == 1 && p != 0 && p != first && alive(p)
	})
	waitFor(t, "the restarted plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	sp.Timeout = 3 * time.Minute
	f.register(sp)
	waitFor(t, "the new runner to adopt the plugin's process", func() bool {
		return strings.Contains(f.logs.String(), `adopted the running plugin" plugin=hp`)
	})
	waitFor(t, "the new runner to probe the plugin", func() bool {
		for _, p := range ag.Status().Plugins {
			if p.ID == "hp" && p.Health != "" {
				return true
			}
		}
		return false
	})
	if got := restarts(); got != 1 {
		t.Errorf("/healthz restarts of plugin hp after its timeout was changed = %d, want 1: the agent restarted it once (metrics still count %q)",
			got, slices.DeleteFunc(rec.list(), func(e string) bool { return !strings.HasPrefix(e, "restarted ") }))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
