package agent

import (
	"fmt"
	"strings"
	"testing"
)

// A plugin started by hand, not by an agent, that binds its socket and then daemonises (its
// daemon inherits the listening socket; the process that called listen() exits): the agent
// finds the socket live, leaves the plugin alone, and warns, naming the process that serves
// it. SO_PEERCRED names the process that listened, which has exited (or whose pid another
// process has since): the warning named a process that does not serve the socket. It names
// the daemon holding the listening socket, found by its descriptors.
func TestForeignPluginWarningNamesTheProcessHoldingItsSocket(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("dm", "listens-then-daemonises")
	root := sp.Exec.Env.Plain()[pluginRootEnv]
	t.Cleanup(func() { killWithEnv(pluginRootEnv + "=" + root) })
	listener := f.runByHand(sp) // exited, reaped: SO_PEERCRED still names it
	waitFor(t, "the daemon to serve the socket", func() bool { return socketsLive([]string{sp.Socket}) })
	daemons := pidsWithEnv(pluginRootEnv + "=" + root)
	if len(daemons) != 1 || daemons[0] == listener {
		t.Fatalf("processes with the plugin's root: %v (the listener was %d); want its daemon alone", daemons, listener)
	}
	if peer := peerPid(sp.Socket); peer != listener {
		t.Skipf("SO_PEERCRED names pid %d, not the process that listened (%d): not the case under test", peer, listener)
	}
	f.register(sp)
	stop := f.startAgent(testSettings)
	waitFor(t, "the agent to warn about the plugin no agent started", func() bool {
		return strings.Contains(f.logs.String(), "no volctl agent started it")
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(l, "no volctl agent started it") {
			line = l
		}
	}
	if !strings.Contains(line, fmt.Sprintf("served_by_pid=%d", daemons[0])) {
		t.Errorf("the warning does not name the daemon serving the socket, pid %d (the process that listened, %d, has exited):\n%s",
			daemons[0], listener, line)
	}
	if !alive(daemons[0]) {
		t.Errorf("the agent stopped pid %d, a plugin it did not start", daemons[0])
	}
}
