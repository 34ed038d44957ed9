package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// docs/agent.md: "Only one agent runs per state dir, and a second one exits 4 and names the
// first one's pid", and under systemd, with the unit's --metrics-addr 127.0.0.1:9808, "A second
// agent that systemd starts while the first still holds the lock exits 4". A second agent given
// the same --metrics-addr as the first (the same unit, the same command line) binds the metrics
// port before it looks at the agent lock, and exits 2 saying the address is in use: the port, not
// the agent holding the state dir, is named, and the exit code is not the conflict's.
// Found by helper review66.
func TestSecondAgentWithTheSameMetricsAddrExits4NamingTheFirst(t *testing.T) {
	dir := hostpathtest.ShortDir(t)
	state := filepath.Join(dir, "state")
	ios, _, _, _ := iostreams.Test()
	stderr := &iostreams.SyncBuffer{}
	ios.ErrOut = stderr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &AgentOptions{IO: ios, StateDir: func() (string, error) { return state, nil }, MetricsAddr: "127.0.0.1:0", LogFormat: "text"}
	done := make(chan error, 1)
	go func() { done <- agentRun(ctx, first) }()
	defer func() {
		cancel()
		<-done
	}()
	re := regexp.MustCompile(`serving metrics" addr=(127\.0\.0\.1:\d+)`)
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" || !strings.Contains(stderr.String(), "agent starting") {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first agent did not start:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}

	ios2, _, _, stderr2 := iostreams.Test()
	second := &AgentOptions{IO: ios2, StateDir: func() (string, error) { return state, nil }, MetricsAddr: addr, LogFormat: "text"}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	err := agentRun(ctx2, second)
	if err == nil {
		t.Fatal("a second agent on the state dir ran")
	}
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "another volctl agent is running") {
		t.Fatalf("second agent with the first's --metrics-addr: exit %d, err = %v (stderr %q); want exit %d naming the agent that holds the state dir",
			ExitCode(err), err, stderr2, ExitConflict)
	}
}

// volctl agent --help says a stop "takes at most --stop-timeout and 5 s more", while the stop
// waits up to stop_timeout for a publish under way in another process, then up to stop_timeout
// for the plugin's processes and 5 s for SIGKILL (docs/agent.md: "bounded by twice stop_timeout
// and 5 s more", TestStopWaitsForAPublishNoLongerThanStopTimeout). A service manager's stop
// timeout sized from the help (TimeoutStopSec=15 for the default 10s) kills the agent mid-stop.
// Found by helper review66.
func TestAgentHelpGivesTheStopsDocumentedBound(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	cmd := newCmdAgent(&Factory{IO: ios}, func(*AgentOptions) error { return nil })
	long := strings.Join(strings.Fields(cmd.Long), " ")
	if strings.Contains(long, "the stop takes at most --stop-timeout and 5 s more") || !strings.Contains(long, "twice") {
		t.Errorf("volctl agent --help bounds the stop by one --stop-timeout and 5 s; the stop waits up to twice it (docs/agent.md):\n%s", cmd.Long)
	}
}
