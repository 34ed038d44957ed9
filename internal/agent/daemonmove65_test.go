package agent

import (
	"path/filepath"
	"testing"
	"time"
)

// An agent killed once a plugin's process exited leaving its daemon serving socket S1, before
// it recorded the daemon, leaves a pid file naming the exited process, its instance and the
// sockets it serves (S1). The plugin is then registered again on S2 (no mounts: allowed). The
// next agent looks for the daemon only on the socket declared NOW (adoptDaemon is given
// execEndpoint(r.spec), S2), finds nothing, starts a second process on S2 and overwrites the
// pid file, losing the old instance: the first daemon runs on for good, serving S1 on the
// plugin's own root beside the new process, unsupervised, never adopted, never stopped, not
// even by a clean stop with no mounts (docs: the pid file records the sockets the process
// serves so that an adopting agent can handle a process left on its old socket; an agent
// killed before recording the daemon leaves it adoptable, TestAgentKilledBeforeRecordingADaemonLeavesItAdoptable).
// Found by helper review65.
func TestDaemonLeftOnOldSocketIsAdoptedAfterASocketMove(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("dm", "daemonizes")
	f.register(sp)
	f.runAgentKilledAt("agent-killed-while-daemonising")
	daemon := f.childPid("dm")
	moved := sp
	moved.Socket = filepath.Join(f.dir, "sockets", "dm-new.sock")
	if _, err := f.e.RegisterPlugin(f.ctx, moved); err != nil {
		t.Fatalf("registering dm on another socket with no mounts: %v", err)
	}
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy on its new socket", func() bool { return f.plugin("dm").Healthy })
	// Give the agent time to deal with the outdated daemon it should have found (replace it).
	time.Sleep(2 * time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(daemon) {
		t.Errorf("the daemon dm's process left serving its old socket %s (pid %d, its instance in the killed agent's pid file) still runs after the next agent "+
			"started dm again on %s and stopped cleanly with no mounts: never adopted nor stopped, and its instance is gone from the pid file\nagent log:\n%s",
			sp.Socket, daemon, moved.Socket, f.logs.String())
	}
}
