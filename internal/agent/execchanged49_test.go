package agent

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// withEnv is sp with its exec block's env given one more variable: the declaration an operator
// changes in the agent's config, or registers again, while its process runs.
func withEnv(sp spec.Plugin, k, v string) spec.Plugin {
	ex := *sp.Exec
	ex.Env = maps.Clone(sp.Exec.Env)
	ex.Env[k] = v
	sp.Exec = &ex
	return sp
}

// environOf is the environment pid was started with; nil when it cannot be read.
func environOf(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// supervisedUnderAClaim registers plugin hp with an exec block, runs an agent that starts it,
// and has volume db claimed through it, mounted for real (as root; skipped otherwise). It
// returns the declaration, the agent's stop and the plugin's pid.
// leftRunningUnderAClaim is supervisedUnderAClaim with the agent stopped: its plugin's process,
// under the claim, is left running (checked), for the next agent to adopt.
func (f *fixture) leftRunningUnderAClaim() (sp spec.Plugin, pid int) {
	f.t.Helper()
	sp, stop, pid := f.supervisedUnderAClaim()
	if err := stop(); err != nil {
		f.t.Fatal(err)
	}
	if !alive(pid) {
		f.t.Fatalf("plugin pid %d stopped at the agent's stop under its mounts", pid)
	}
	return sp, pid
}

func (f *fixture) supervisedUnderAClaim() (sp spec.Plugin, stop func() error, pid int) {
	f.t.Helper()
	hostpathtest.RequireMount(f.t)
	sp, stop = f.supervised()
	f.claimDB("hp")
	return sp, stop, f.pid("hp")
}

// supervised registers plugin hp with an exec block and runs an agent, returning once the
// plugin it started is healthy: the declaration and the agent's stop.
func (f *fixture) supervised() (sp spec.Plugin, stop func() error) {
	f.t.Helper()
	sp = f.execPlugin("hp", "hostpath")
	f.register(sp)
	stop = f.startAgent(testSettings)
	waitFor(f.t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	return sp, stop
}

// claimDB creates volume db on plugin id and claims it for alloc web-0, mounted for real.
func (f *fixture) claimDB(id string) {
	f.t.Helper()
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: id, Capabilities: caps, CapacityMin: 1 << 20}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		f.t.Fatal(err)
	}
}

// expectOutdatedUntilReleased checks what the agent does with plugin hp's process pid, which
// runs an exec block other than the declared one (without CHANGED=1 in its env) under the
// claim claimDB made: left running, said once in an event and in plugin status, and, once the
// claim is released, stopped and started again with the declared exec block.
func (f *fixture) expectOutdatedUntilReleased(pid int) {
	t := f.t
	t.Helper()
	waitFor(t, "the agent to withhold the restart of the outdated plugin", func() bool { return len(f.events("plugin-restart-withheld")) > 0 })
	withheld := f.events("plugin-restart-withheld")
	if len(withheld) != 1 || !strings.Contains(withheld[0], "with the exec block it was started with, not the one declared now") ||
		!strings.Contains(withheld[0], "it has 2 mounts") || !strings.Contains(withheld[0], "pid "+strconv.Itoa(pid)) {
		t.Errorf("plugin-restart-withheld events = %q; want one naming the changed exec block, the mounts and pid %d", withheld, pid)
	}
	if n := f.pid("hp"); n != pid || !alive(pid) || len(f.events("plugin-restart")) != 0 {
		t.Fatalf("the plugin pid %d under its mounts was stopped for its changed exec block (pid file %d, alive %v, restarts %q)",
			pid, n, alive(pid), f.events("plugin-restart"))
	}
	waitFor(t, "plugin status to say the process runs an outdated exec block", func() bool {
		sv := f.plugin("hp").Supervision
		return sv != nil && strings.Contains(sv.Words(), "not the one declared now")
	})

	// Released, it holds no mounts: the next probe stops it, and it is started again at once
	// with the declared exec block.
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the outdated plugin without mounts to be started with its declared exec block", func() bool {
		n := f.pid("hp")
		return n != 0 && n != pid && alive(n) && !alive(pid) && f.plugin("hp").Healthy
	})
	restarts := f.events("plugin-restart")
	if len(restarts) != 1 || !strings.Contains(restarts[0], "and holds no mounts: stopped it, starting it with the declared one") {
		t.Errorf("plugin-restart events = %q; want one saying why", restarts)
	}
	waitFor(t, "plugin status to stop saying the exec block is outdated", func() bool {
		sv := f.plugin("hp").Supervision
		return sv != nil && sv.Pid == f.pid("hp") && !strings.Contains(sv.Words(), "not the one declared now")
	})
	// Polled: a read while the new process was starting (under the race detector, a loaded
	// machine) found its environment empty once.
	waitFor(t, "the restarted plugin to run with the declared CHANGED=1 in its environment", func() bool {
		return slices.Contains(environOf(t, f.pid("hp")), "CHANGED=1")
	})
	if n := len(f.events("plugin-restart-withheld")); n != 1 {
		t.Errorf("%d plugin-restart-withheld events; want one for the whole time it ran under mounts", n)
	}
}

// A plugin left running under mounts by one agent, whose exec block is then changed (the
// agent's config edited, a plugin register) before the next agent starts, was adopted by that
// agent and kept running as first started, for good: nothing said the declaration was not
// what ran, and it never was until the process happened to exit. It is adopted, not stopped
// under its mounts, said to run an outdated exec block, and restarted with the declared one
// once it holds no mounts.
func TestAgentRestartsAnAdoptedPluginWithItsChangedExecBlockOnceItHasNoMounts(t *testing.T) {
	f := newFixture(t)
	sp, pid := f.leftRunningUnderAClaim()

	f.register(withEnv(sp, "CHANGED", "1"))
	stop := f.startAgent(testSettings)
	f.expectOutdatedUntilReleased(pid)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// The same for a declaration changed while the agent runs: the plugin is supervised anew, its
// process adopted as it runs under its mounts, and restarted with the new exec block once it
// holds none.
func TestAgentRestartsARedeclaredPluginOnceItHasNoMounts(t *testing.T) {
	f := newFixture(t)
	sp, stop, pid := f.supervisedUnderAClaim()
	f.register(withEnv(sp, "CHANGED", "1"))
	f.expectOutdatedUntilReleased(pid)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// The pid file records which exec block the process was started with; one written by an
// agent before it did (four fields) reads as unknown, which is taken for the declared one, so
// that an upgrade of volctl restarts nothing. The digest tells apart every part of what the
// process is started with, and nothing else.
func TestPidFileRecordsTheExecBlock(t *testing.T) {
	dir := t.TempDir()
	sp := spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/hp.sock",
		Exec: &spec.Exec{Command: "/bin/plugin", Args: []string{"--a", "b"}, Env: spec.Secrets{"K": "v", "L": "w"}}}
	p := &process{pid: 42, startTick: 7, instance: "abc", execDigest: execDigestOf(sp)}
	if err := writePidFile(dir, "hp", p); err != nil {
		t.Fatal(err)
	}
	got := readPidFile(dir, "hp")
	if got == nil || got.execDigest != execDigestOf(sp) {
		t.Fatalf("read back %+v; want the digest %s", got, execDigestOf(sp))
	}
	r := newRunner(nil, sp)
	r.proc = got
	if r.outdated() {
		t.Error("a process started with the declared exec block is outdated")
	}
	r = newRunner(nil, withEnv(sp, "K", "changed"))
	r.proc = got
	if !r.outdated() {
		t.Error("a process started with another env is not outdated")
	}

	if err := os.WriteFile(pidFilePath(dir, "hp"), []byte("42 7 abc 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := readPidFile(dir, "hp")
	if old != nil {
		r.proc = old
	}
	if old == nil || old.execDigest != "" || r.outdated() {
		t.Errorf("an older agent's pid file read as %+v, outdated; want an unknown exec block, taken for the declared one", old)
	}

	changes := map[string]func(*spec.Plugin){
		"command":   func(s *spec.Plugin) { s.Exec.Command = "/bin/other" },
		"an arg":    func(s *spec.Plugin) { s.Exec.Args = []string{"--a", "c"} },
		"args cut":  func(s *spec.Plugin) { s.Exec.Args = []string{"--a b"} },
		"an env":    func(s *spec.Plugin) { s.Exec.Env = spec.Secrets{"K": "v", "L": "x"} },
		"env split": func(s *spec.Plugin) { s.Exec.Env = spec.Secrets{"K": "v,L", "": "w"} },
		"socket":    func(s *spec.Plugin) { s.Socket = "/run/other.sock" },
	}
	for name, change := range changes {
		c := sp
		ex := *sp.Exec
		ex.Args, ex.Env = slices.Clone(sp.Exec.Args), maps.Clone(sp.Exec.Env)
		c.Exec = &ex
		change(&c)
		if execDigestOf(c) == execDigestOf(sp) {
			t.Errorf("%s changed: the same digest", name)
		}
	}
	same := sp
	same.Timeout = 1 // not what the process runs with
	if execDigestOf(same) != execDigestOf(sp) {
		t.Error("a declaration whose exec block is the same has another digest")
	}
}

// A plugin registered again without its exec block while its process runs under mounts: the
// process is left running, as ever under mounts, and nothing adopts it after (no exec block,
// no runner to), where plugin status said "nothing supervises it until the next agent adopts
// it", and the log said nothing of who stops it now. Both say no agent will.
func TestAgentSaysAPluginWhoseExecBlockWasRemovedIsLeftToTheUser(t *testing.T) {
	f := newFixture(t)
	sp, stop, pid := f.supervisedUnderAClaim()
	bare := sp
	bare.Exec = nil
	f.register(bare)
	waitFor(t, "plugin status to say no agent supervises the process left running", func() bool {
		sv := f.plugin("hp").Supervision
		return sv != nil && sv.Mode == engine.SupervisionLeft && sv.Pid == pid
	})
	if w := f.plugin("hp").Supervision.Words(); !strings.Contains(w, "no agent will: the plugin has no exec block") || strings.Contains(w, "the next agent adopts it") {
		t.Errorf("plugin status says %q; want that no agent adopts it", w)
	}
	waitFor(t, "the agent to warn that nothing stops the process", func() bool {
		return strings.Contains(f.logs.String(), fmt.Sprintf("the process the agent started for it (pid %d) is left running under its mounts, and no agent supervises or stops it from now on", pid))
	})
	if !alive(pid) {
		t.Fatalf("plugin pid %d stopped under its mounts", pid)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
}

// An outdated process is not stopped for a declaration that cannot start (its command not
// there, or one the agent refuses to run): the plugin would be down until the exec block is
// mended. It runs on, which one event says, naming why, also once it holds no mounts.
func TestAgentKeepsAnOutdatedPluginWhoseDeclaredExecBlockCannotStart(t *testing.T) {
	f := newFixture(t)
	sp, stop, pid := f.supervisedUnderAClaim()
	broken := sp
	ex := *sp.Exec
	ex.Command = filepath.Join(f.dir, "no-such-plugin")
	broken.Exec = &ex
	f.register(broken)
	waitFor(t, "the agent to say the declared exec block cannot start", func() bool { return len(f.events("plugin-restart-withheld")) > 0 })
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	// Probes go on without mounts; none stops it.
	for range 10 {
		time.Sleep(testSettings.ProbeIntervalReady)
		if !alive(pid) || f.pid("hp") != pid {
			t.Fatalf("plugin pid %d stopped (pid file %d) for a declared exec block that cannot start; events %q", pid, f.pid("hp"), f.events("plugin-restart"))
		}
	}
	if sv := f.plugin("hp").Supervision; sv == nil || !strings.Contains(sv.Words(), "not the one declared now, which cannot start") {
		t.Errorf("plugin status says %+v; want that the declared exec block cannot start", sv)
	}
	withheld := f.events("plugin-restart-withheld")
	if len(withheld) != 1 || !strings.Contains(withheld[0], "not restarting it with the declared one, which cannot start") || !strings.Contains(withheld[0], "no-such-plugin") {
		t.Errorf("plugin-restart-withheld events = %q; want one naming the command that cannot start", withheld)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A plugin registered again with only its RPC timeout changed was stopped and started again,
// down meanwhile, for a change that is volctl's alone: its process runs on, adopted by the
// runner that supervises it anew.
func TestAgentKeepsThePluginRunningWhenOnlyItsTimeoutChanges(t *testing.T) {
	f := newFixture(t)
	sp, stop := f.supervised()
	pid := f.pid("hp")
	sp.Timeout = 3 * time.Minute
	f.register(sp)
	waitFor(t, "the new runner to adopt the plugin's process, or start another", func() bool {
		l := f.logs.String()
		return strings.Contains(l, "adopted the running plugin") || strings.Count(l, "started plugin") > 1
	})
	if n := f.pid("hp"); n != pid || !alive(pid) || len(f.events("plugin-start")) != 1 || len(f.events("plugin-stop")) != 0 {
		t.Fatalf("plugin pid %d -> %d (alive %v), starts %q, stops %q; want the process kept", pid, n, alive(pid), f.events("plugin-start"), f.events("plugin-stop"))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
