package agent

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A plugin's pid file whose sockets field (the 6th) reads as JSON but names no socket ("{}",
// or a type alone: a file edited by hand, written by a newer agent that moved the sockets
// elsewhere, or damaged) for a process that has exited, with an instance, sends adoptDaemon
// to execEndpoint(*rec.served), which indexes execSockets' empty list: a panic, which in the
// agent (crash.Go) ends the whole agent, at every start, for as long as the file stays.
// readPidFile's contract is "nil when there is none that reads"; a record that names no
// socket should be taken as unknown ("-"), not crash the agent.
// Found by helper review65.
func TestPidFileSocketsFieldNamingNoSocketDoesNotPanic(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // exited and reaped
	for _, js := range []string{`{}`, `{"id":"p","type":"node"}`} {
		field := base64.RawURLEncoding.EncodeToString([]byte(js))
		line := fmt.Sprintf("%d 12345 0123456789abcdef01234567 0 - %s\n", dead, field)
		if err := os.WriteFile(pidFilePath(dir, "p"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("adoptDaemon on a pid file whose sockets field is %s (%q) panicked: %v: in the agent this ends the process at every start",
						js, strings.TrimSpace(line), r)
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, _ = adoptDaemon(ctx, dir, "p", filepath.Join(dir, "p.sock"))
		}()
	}
}

// A plugin registered with the ID "agent" (a valid ID: nothing reserves it) gets the pid file
// run/agent.pid, which is the agent's own (docs/agent.md's table lists both). Its start
// overwrites the agent's record, so a second agent's refusal no longer names the first one's
// pid, as docs/agent.md promises ("a second one exits 4 and names the first one's pid").
// Found by helper review65.
func TestPluginNamedAgentLeavesTheAgentsPidFileAlone(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("agent", "hostpath"))
	stop := f.startAgent(testSettings)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the plugin \"agent\" to be healthy", func() bool { return f.plugin("agent").Healthy })
	b, _ := os.ReadFile(filepath.Join(f.dir, "run", "agent.pid"))
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(os.Getpid()) {
		t.Errorf("run/agent.pid holds %q once plugin \"agent\" started, not the agent's pid %d: the plugin's pid file and the agent's are one file", got, os.Getpid())
	}
	err := f.runSecondAgent()
	if want := fmt.Sprintf("(pid %d)", os.Getpid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("second agent: %v; want its refusal to name the first agent's pid %s", err, want)
	}
}

// Worse, an agent killed while plugin "agent" runs leaves the plugin's record in run/agent.pid,
// and the next agent writes its own pid there before any runner reads it: the record of the
// plugin's process (its instance) is gone, so the daemon the plugin left is taken for a plugin
// no agent started, probed only and never stopped, where the same scenario with any other ID
// is adopted (TestAgentKilledBeforeRecordingADaemonLeavesItAdoptable).
// Found by helper review65.
func TestPluginNamedAgentIsAdoptedAfterAnAgentCrash(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("agent", "daemonizes")
	f.register(sp)
	f.runAgentKilledAt("agent-killed-while-daemonising")
	daemon := f.childPid("agent")
	stop := f.startAgent(testSettings)
	adopted := fmt.Sprintf("adopted pid %d, the daemon its process left", daemon)
	waitFor(t, "the next agent to deal with the plugin's socket", func() bool {
		return slices.ContainsFunc(f.events("plugin-daemon"), func(ev string) bool { return strings.Contains(ev, adopted) }) ||
			strings.Contains(f.logs.String(), "no volctl agent started it")
	})
	if logs := f.logs.String(); strings.Contains(logs, "no volctl agent started it") {
		t.Errorf("the next agent took plugin \"agent\"'s daemon (pid %d), started by the killed agent, for a foreign plugin: "+
			"its record in run/agent.pid was overwritten by the agent's own pid file\n%s", daemon, logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(daemon) {
		t.Errorf("plugin \"agent\"'s daemon (pid %d) still runs after a clean stop of the next agent (no mounts): lost track of", daemon)
	}
}
