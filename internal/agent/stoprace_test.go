package agent

import (
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
	claimed := make(chan error, 1)
	_, stop := f.startAgentWith(func(c *Config) {
		c.afterCount = func(id string) {
			// Between the count and the signal: a claim is admitted, and runs as far as it can.
			waiting := make(chan struct{}, 1)
			ctx := engine.WithProgress(f.ctx, func(step string) {
				if strings.HasPrefix(step, "waiting for the lock") {
					select {
					case waiting <- struct{}{}:
					default:
					}
				}
			})
			go func() {
				_, err := other.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"})
				claimed <- err
			}()
			select {
			case err := <-claimed:
				claimed <- err
			case <-waiting:
			case <-time.After(30 * time.Second):
				t.Error("the claim neither finished nor waited for a lock")
			}
		}
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
