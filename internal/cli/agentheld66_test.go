package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// An agent whose --metrics-addr is taken by another program (not an agent: a node exporter on
// the port) exits 2, "address already in use", and did not start. Before it says so it now
// opens the engine on its state dir to ask whether an agent holds it (agentHeld): a state dir
// that did not exist is made, its database created, its lock dir with it, by a start that
// failed on a usage error (a mistyped --state-dir left behind as a fresh, empty state). Nothing
// else that fails before the engine opens writes the state. Found by helper review66.
func TestAgentOnATakenMetricsAddrMakesNoStateDir(t *testing.T) {
	dir := hostpathtest.ShortDir(t)
	state := filepath.Join(dir, "state")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	ios, _, _, stderr := iostreams.Test()
	opts := &AgentOptions{IO: ios, StateDir: func() (string, error) { return state, nil }, MetricsAddr: lis.Addr().String(), LogFormat: "text"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = agentRun(ctx, opts)
	if err == nil {
		t.Fatal("the agent ran on a taken --metrics-addr")
	}
	if ExitCode(err) != ExitUsage {
		t.Fatalf("exit %d, err %v; want %d (the address in use)", ExitCode(err), err, ExitUsage)
	}
	if _, serr := os.Stat(state); serr == nil {
		entries, _ := os.ReadDir(state)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the agent failed to start (%v), and left state dir %s made, holding %v (stderr %q)", err, state, names, stderr)
	}
}
