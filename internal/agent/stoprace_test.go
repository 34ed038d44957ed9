package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A claim command in another process, admitted after the agent counted a plugin's mounts at
// shutdown and before it signalled the plugin, must not get its volume published through a
// plugin that is then stopped under it: either the agent sees the claim and leaves the
// plugin running, or the claim sends nothing to the plugin being stopped.
func TestAgentStopDoesNotRaceAClaimAdmittedMeanwhile(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	other := f.openEngine() // the claim command, another process
	var claimed chan error
	_, stop := f.startAgentWith(func(c *Config) {
		// Between the count and the signal: a claim is admitted, and runs as far as it can.
		c.afterCount = func(string) { claimed, _ = claimAsAnotherProcess(t, other) }
	})
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "hp", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	pid := f.pid("hp")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if claimed == nil {
		t.Fatal("the agent did not stop the plugin")
	}
	err := <-claimed
	c, cerr := f.e.ClaimInfo(f.ctx, "db", "web-0")
	if err == nil && !alive(pid) {
		t.Fatalf("the agent stopped plugin pid %d after a claim admitted between its count and its signal was published through it (claim %+v)", pid, c)
	}
	if err != nil && cerr == nil && c.State == "published" {
		t.Fatalf("claim failed (%v) but is recorded published", err)
	}
	t.Logf("claim: %v; recorded: %+v, %v; plugin alive: %v", err, c, cerr, alive(pid))
}

// claimAsAnotherProcess starts a claim of db for web-0 through other and waits until it has
// finished or waits for a lock: as far as it can get now. The claim's result is sent on the
// returned channel; finished says it came back already.
func claimAsAnotherProcess(t *testing.T, other *engine.Engine) (result chan error, finished bool) {
	t.Helper()
	waiting := make(chan struct{}, 1)
	ctx := engine.WithProgress(context.Background(), func(step string) {
		if strings.HasPrefix(step, "waiting for the lock") {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
	})
	result = make(chan error, 1)
	go func() {
		_, err := other.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		result <- err
	}()
	select {
	case err := <-result:
		result <- err
		return result, true
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Error("the claim neither finished nor waited for a lock")
	}
	return result, false
}

// The runner's restart of an unhealthy plugin without mounts counts and stops as the shutdown
// does: a claim admitted by another process between the count and the stop is not published
// through the plugin being stopped.
func TestAgentRestartDoesNotRaceAClaimAdmittedMeanwhile(t *testing.T) {
	f := newFixture(t)
	clock, stop := f.startSickeningPlugin()
	other := f.openEngine() // the claim command, another process
	var claimed chan error
	orig := stopProcess
	t.Cleanup(func() { stopProcess = orig })
	stopProcess = func(p *process, timeout time.Duration) error {
		// Counted, no mounts: now a claim comes.
		var finished bool
		if claimed, finished = claimAsAnotherProcess(t, other); finished {
			err := <-claimed
			claimed <- err
			if err == nil {
				t.Errorf("the runner went on to stop plugin pid %d after a claim admitted after its count was published through it", p.pid)
			}
		}
		return orig(p, timeout)
	}
	pid := f.pid("fuse")
	f.sicken()
	clock.Advance(301 * time.Millisecond)
	waitFor(t, "the agent to restart the plugin", func() bool { return len(f.events("plugin-restart")) > 0 })
	if alive(pid) {
		t.Errorf("the unhealthy plugin pid %d still runs after its restart", pid)
	}
	if claimed != nil {
		t.Logf("claim after the restart: %v", <-claimed)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
