package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin's exec env changed (a credential rotated by plugin register) while its process
// holds mounts: the agent keeps the process running as it was started, its environment holding
// the old value, but the state held only the new one, so nothing scrubbed the old: the process
// echoing it in its probe's error had it printed whole by plugin status (the plugin's last
// error), the event log and the agent's own log. The old value stays a secret while a process
// started with it may run, and goes (scrubbed from the event log then, as any secret leaving
// the state) once the agent runs the declared exec block in its place.
func TestARotatedExecEnvValueStaysScrubbedWhileTheOldProcessRuns(t *testing.T) {
	const old, rotated = "old-token-5f3a9c", "new-token-77c1e2"
	f := newFixture(t)
	sp := withEnv(f.execPlugin("fuse", "sickens"), "TOKEN", old)
	pid := f.sickensUnderAClaim(sp)

	f.register(withEnv(sp, "TOKEN", rotated))
	waitFor(t, "the agent to keep the process with the old env under its mount", func() bool {
		return len(f.events("plugin-restart-withheld")) > 0
	})
	if !slices.Contains(environOf(t, pid), "TOKEN="+old) {
		t.Fatalf("the process kept under its mount (pid %d) does not run with the old TOKEN", pid)
	}

	f.sicken()
	waitFor(t, "the event saying the plugin became unhealthy", func() bool {
		return slices.ContainsFunc(f.events("plugin-health"), func(m string) bool { return strings.Contains(m, "became unhealthy") })
	})
	lastErr := f.plugin("fuse").LastError
	if !strings.Contains(lastErr, "token [REDACTED] refused") {
		t.Errorf("plugin status's last error = %q; want the old token echoed, scrubbed", lastErr)
	}
	f.expectNowhere(old)

	// Released, the process is stopped and started again with the rotated env: the old value
	// is no longer kept, and what it was scrubbed from stays scrubbed.
	if err := os.Remove(filepath.Join(f.dir, "hostpath-fuse", "sick")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to be healthy again", func() bool { return f.plugin("fuse").Healthy })
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to run with the rotated env", func() bool {
		n := f.pid("fuse")
		return n != 0 && n != pid && slices.Contains(environOf(t, n), "TOKEN="+rotated)
	})
	waitFor(t, "the old value to be let go", func() bool { return !f.stateHolds(old) })
	f.expectNowhere(old)
}

// stateHolds reports whether the state holds value among its secrets, as another process
// reads them: the engine that let a value go still scrubs it for its life
// (store.Store.ForgottenHere), and the agent runs on the fixture's.
func (f *fixture) stateHolds(value string) bool {
	f.t.Helper()
	e, err := engine.Open(f.ctx, engine.Config{StateDir: f.dir})
	if err != nil {
		f.t.Fatal(err)
	}
	defer e.Close()
	redact, err := e.Redactor(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return redact(value) != value
}

// expectNowhere checks that the event log, the plugins' last errors and the agent's log hold
// nothing of secret.
func (f *fixture) expectNowhere(secret string) {
	f.t.Helper()
	for _, ev := range f.events("") {
		if strings.Contains(ev, secret) {
			f.t.Errorf("an event holds the secret: %q", ev)
		}
	}
	ps, err := f.e.Plugins(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range ps {
		if strings.Contains(p.LastError, secret) {
			f.t.Errorf("plugin %q's last error holds the secret: %q", p.ID, p.LastError)
		}
	}
	if strings.Contains(f.logs.String(), secret) {
		f.t.Errorf("the agent's log holds the secret")
	}
}

// A plugin whose env was rotated and which was then deregistered while no agent ran keeps its
// earlier values as secrets (a process started with them might still run); no agent-started
// process of it runs (no pid file), so the next agent lets them go at its start. Before, they
// stayed in the state for good.
func TestAgentLetsGoOfTheKeptEnvOfAPluginDeregisteredWhileNoneRan(t *testing.T) {
	const old, rotated = "old-token-a1b2c3", "new-token-d4e5f6"
	f := newFixture(t)
	sp := withEnv(f.execPlugin("hp", "hostpath"), "TOKEN", old)
	f.register(sp)
	f.register(withEnv(sp, "TOKEN", rotated))
	if err := f.e.DeregisterPlugin(f.ctx, "hp", false); err != nil {
		t.Fatal(err)
	}
	redact, err := f.e.Redactor(f.ctx)
	if err != nil || redact(old) == old || redact(rotated) == rotated {
		t.Fatalf("before the agent: the deregistered plugin's env values are not kept as secrets (%v)", err)
	}
	stop := f.startAgent(testSettings)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the agent to let go of the values kept", func() bool { return !f.stateHolds(old) && !f.stateHolds(rotated) })
}

// sickensUnderAClaim registers sp (plugin "fuse", mode sickens), runs an agent that starts it
// until the test ends, and has volume db claimed through it, mounted for real (as root;
// skipped otherwise). It returns the plugin's pid.
func (f *fixture) sickensUnderAClaim(sp spec.Plugin) int {
	f.t.Helper()
	f.mountsForReal()
	f.register(sp)
	stop := f.startAgent(testSettings)
	f.t.Cleanup(func() {
		if err := stop(); err != nil {
			f.t.Error(err)
		}
	})
	waitFor(f.t, "the plugin to be healthy", func() bool { return f.plugin("fuse").Healthy })
	f.claimDB("fuse")
	return f.pid("fuse")
}
