package agent

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// A plugin that does not end on SIGTERM (killed after stop_timeout, as docs/agent.md says) is
// stopped by the agent's clean stop with no mounts: plugin status must then say the agent
// stopped it. Before (earlier in round 61, when the stop's wait for the publish lock became
// stop_timeout), the record of the stop and the exec env let go of were written on that wait's
// context, run out by the plugin's own stop_timeout: plugin status said the agent was killed
// before it could record its stop. Found by helper review61 (this round's own change).
func TestCleanStopOfAPluginKilledAfterStopTimeoutIsRecorded(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("hp", "stubborn"))
	s := testSettings
	s.StopTimeout = 500 * time.Millisecond
	stop := f.startAgent(s)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })
	pid := f.pid("hp")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("the plugin (pid %d) still runs after the agent's clean stop", pid)
	}
	sv := f.plugin("hp").Supervision
	if sv == nil || sv.Mode != engine.SupervisionStopped || sv.Pid != pid {
		words := "<nil>"
		if sv != nil {
			words = sv.Words()
		}
		t.Errorf("after the agent's clean stop, the plugin (pid %d) killed after stop_timeout: supervision %+v (%q); want stopped by the agent", pid, sv, words)
	}
}

// A plugin crashed under mounts, leaving its helper outside its group: the log says "they are
// stopped with the plugin once it has no mounts". The plugin is then registered again with only
// its RPC timeout changed: the agent keeps its process running and a new runner adopts it. The
// mounts then go, and the agent's clean stop finds none: the crashed instance's helper must be
// stopped with the plugin, as at a clean stop without the re-registration
// (TestCleanStopStopsWhatACrashedInstanceLeft): the new runner inherits leftUnder. Before
// (earlier in round 61), it lived on the old runner alone, which the re-declaration drops
// (Agent.sync): the helper ran on after the agent. Found by helper review61.
func TestCrashedInstancesHelperIsStoppedAfterARedeclarationKeptTheProcess(t *testing.T) {
	f := newFixture(t)
	stop, helper, cmd := crashUnderMounts(t, f)
	waitFor(t, "the restarted plugin to be healthy", func() bool { return f.plugin("fuse").Healthy })
	if !alive(helper) {
		t.Fatalf("the helper (pid %d) was stopped under mounts", helper)
	}
	t.Cleanup(func() {
		if alive(helper) {
			_ = syscall.Kill(helper, syscall.SIGKILL)
		}
	})
	second := f.pid("fuse")
	sp := f.execPlugin("fuse", "mounts-with-helper")
	sp.Timeout = 3 * time.Minute // only what volctl does with the plugin: its process runs on
	f.register(sp)
	waitFor(t, "the new runner to adopt the plugin's process, or start another", func() bool {
		l := f.logs.String()
		return strings.Contains(l, "adopted the running plugin") || strings.Count(l, "started plugin") > 2
	})
	if n := f.pid("fuse"); n != second || !alive(second) {
		t.Fatalf("plugin pid %d -> %d (alive %v); want the process kept", second, n, alive(second))
	}
	mountsGoneThenStop(t, f, cmd, stop)
	if alive(helper) {
		t.Errorf("the crashed plugin's helper (pid %d), left outside its group under mounts (\"they are stopped with the plugin once it has no mounts\"), "+
			"still runs after the agent's clean stop with no mounts, the plugin having been registered again with only its timeout changed", helper)
	}
}
