package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestAgentMetricsEndToEnd runs `volctl agent` as a process with a supervised hostpath plugin
// (its exec block) and an in-memory plugin on a real socket, under a notify socket as systemd
// gives a Type=notify unit, with --metrics-addr 127.0.0.1:0 and JSON logs. It waits for
// READY=1, reads /healthz, and scrapes /metrics over loopback before and after a claim, a
// release the plugin fails (left for the agent's reconcile), the agent's reconcile finishing
// it, and a kill of the supervised plugin: the values move with what happened.
func TestAgentMetricsEndToEnd(t *testing.T) {
	t.Parallel()
	dir := hostpathtest.ShortDir(t)
	state := filepath.Join(dir, "state")
	volctl := func(args ...string) (string, error) {
		cmd := exec.Command(shortVolctl(t), args...)
		// Short retry waits (testRetry): the release below fails its tries either way.
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1", commandRetryEnv+"=10ms")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) {
		t.Helper()
		if out, err := volctl(args...); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	faults := csitest.NewFaults()
	memSock, stopMem := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	defer stopMem()
	must("plugin", "register", "--id", "mem", "--socket", memSock)
	writeFile(t, filepath.Join(dir, "db.hcl"), "id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"mem\"\n"+
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n")
	must("volume", "create", filepath.Join(dir, "db.hcl"))
	writeFile(t, filepath.Join(dir, "agent.hcl"), fmt.Sprintf(`plugin "hp" {
  type   = "monolith"
  socket = %q
  exec {
    command = "volctl"
    args    = ["plugin", "serve", "hostpath", "--root", %q, "--node-id", "n1"]
  }
}
`, filepath.Join(dir, "hp.sock"), filepath.Join(dir, "hproot")))

	// systemd's side of sd_notify, in the abstract namespace as systemd names it.
	notifyName := fmt.Sprintf("@volctl-test-notify-%d-%d", os.Getpid(), time.Now().UnixNano())
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyName, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()

	cmd := exec.Command("volctl", "agent", "--config", filepath.Join(dir, "agent.hcl"), "--metrics-addr", "127.0.0.1:0",
		"--log-format", "json", "--probe-interval", "100ms", "--probe-interval-ready", "200ms",
		"--reconcile-interval", "300ms", "--gc-interval", "1h")
	// Short retry waits (testRetry): a reconcile pass on the failing release is counted failed
	// once its tries are spent, which took 15.5 s of waits at agent.Retry's own.
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1", "NOTIFY_SOCKET="+notifyName, agentRetryEnv+"=10ms")
	// The supervised plugin outlives a killed agent: stop it by its pid file, after the agent
	// (cleanups run last registered first).
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(state, "run", "hp.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.Fields(string(b))[0]); err == nil {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})
	stopAgent, logs := startBackgroundOutput(t, cmd)

	// The bound address, from the JSON log.
	var addr string
	eventually(t, "the agent to log the metrics address", func() bool {
		for _, rec := range jsonLines(t, logs.String()) {
			if rec["msg"] == "serving metrics" {
				addr, _ = rec["addr"].(string)
			}
		}
		return addr != ""
	})
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("metrics address %q is not on loopback", addr)
	}

	// READY=1 once hp is healthy and the start-up reconcile ran.
	_ = notify.SetReadDeadline(time.Now().Add(60 * time.Second))
	buf := make([]byte, 256)
	n, err := notify.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("notify socket: %q, %v; want READY=1\n%s", buf[:n], err, logs.String())
	}
	code, body := get(t, "http://"+addr+"/healthz")
	var health struct {
		Ready   bool
		Plugins []struct {
			ID         string
			Supervised bool
			Pid        int
			Health     string
		}
	}
	if err := json.Unmarshal([]byte(body), &health); err != nil {
		t.Fatalf("/healthz: %v\n%s", err, body)
	}
	if code != http.StatusOK || !health.Ready || len(health.Plugins) != 2 || health.Plugins[0].ID != "hp" ||
		!health.Plugins[0].Supervised || health.Plugins[0].Pid == 0 || health.Plugins[0].Health != "healthy" || health.Plugins[1].ID != "mem" {
		t.Fatalf("/healthz after READY=1: %d\n%s", code, body)
	}

	m := scrape(t, addr)
	for _, c := range []struct {
		series string
		want   float64
	}{
		{`volctl_agent_ready`, 1},
		{`volctl_plugin_healthy{plugin="hp"}`, 1},
		{`volctl_plugin_ready{plugin="mem"}`, 1},
		{`volctl_claims{state="published"}`, 0},
		{`volctl_claims_releasing`, 0},
		{`volctl_volumes{plugin="mem",schedulable="true"}`, 1},
		{`volctl_reconcile_outcomes_total{outcome="released"}`, 0},
		{`volctl_reconcile_outcomes_total{outcome="failed"}`, 0},
		{`volctl_reconcile_passes_total{result="ok",trigger="start"}`, 1},
	} {
		if got, ok := m[c.series]; !ok || got != c.want {
			t.Errorf("after start: %s = %v (present %t), want %v", c.series, got, ok, c.want)
		}
	}
	if m[`volctl_plugin_probe_duration_seconds_count{plugin="hp"}`] < 1 {
		t.Errorf("no probe of hp timed: %v", m[`volctl_plugin_probe_duration_seconds_count{plugin="hp"}`])
	}
	if m[`volctl_csi_rpcs_total{code="OK",plugin="hp",rpc="Probe"}`] < 1 ||
		m[`volctl_csi_rpc_duration_seconds_count{code="OK",plugin="hp",rpc="Probe"}`] < 1 {
		t.Errorf("the agent's Probe RPCs to hp are not counted and timed")
	}

	// A claim (by the command line): the store's count moves.
	must("volume", "claim", "db", "--alloc", "web-0")
	if got := scrape(t, addr)[`volctl_claims{state="published"}`]; got != 1 {
		t.Errorf("after a claim: volctl_claims{state=\"published\"} = %v, want 1", got)
	}

	// A release the plugin fails: the command leaves the claim releasing, the agent's reconcile
	// passes fail on it too, with the plugin's code.
	faults.FailAlways("NodeUnpublishVolume", codes.Unavailable)
	if out, err := volctl("volume", "release", "db", "--alloc", "web-0"); err == nil {
		t.Fatalf("release through a failing plugin succeeded:\n%s", out)
	}
	eventually(t, "the agent's reconcile to fail on the releasing claim", func() bool {
		m := scrape(t, addr)
		return m[`volctl_claims_releasing`] == 1 && m[`volctl_claims_needs_reconcile`] == 1 &&
			m[`volctl_claims_degraded`] == 0 &&
			m[`volctl_reconcile_outcomes_total{outcome="failed"}`] >= 1 &&
			m[`volctl_reconcile_problems`] >= 1 &&
			m[`volctl_csi_rpcs_total{code="Unavailable",plugin="mem",rpc="NodeUnpublishVolume"}`] >= 1
	})

	// The plugin recovers: the agent's reconcile releases the claim.
	faults.Clear("NodeUnpublishVolume")
	eventually(t, "the agent's reconcile to release the claim", func() bool {
		m := scrape(t, addr)
		return m[`volctl_reconcile_outcomes_total{outcome="released"}`] == 1 &&
			m[`volctl_claims{state="published"}`] == 0 && m[`volctl_claims{state="unpublishing"}`] == 0 &&
			m[`volctl_claims_releasing`] == 0 && m[`volctl_reconcile_problems`] == 0 &&
			m[`volctl_csi_rpcs_total{code="OK",plugin="mem",rpc="NodeUnpublishVolume"}`] >= 1
	})

	// The supervised plugin killed: its restart is counted.
	if len(health.Plugins) > 0 {
		if err := syscall.Kill(health.Plugins[0].Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the restart of hp to be counted", func() bool {
		return scrape(t, addr)[`volctl_plugin_restarts_total{plugin="hp",reason="exited"}`] == 1
	})

	// SIGTERM: the agent tells systemd it is stopping and exits 0.
	if _, err := stopAgent(); err != nil {
		t.Fatalf("agent: %v\n%s", err, logs.String())
	}
	n, err = notify.Read(buf)
	if err != nil || string(buf[:n]) != "STOPPING=1" {
		t.Errorf("notify socket on stop: %q, %v; want STOPPING=1", buf[:n], err)
	}
	// The log is JSON throughout, with the plugin, volume and alloc as fields.
	var sawPlugin, sawClaim bool
	for _, rec := range jsonLines(t, logs.String()) {
		sawPlugin = sawPlugin || (rec["msg"] == "started plugin" && rec["plugin"] == "hp")
		sawClaim = sawClaim || (rec["volume"] == "db" && rec["alloc"] == "web-0")
	}
	if !sawPlugin || !sawClaim {
		t.Errorf("the JSON log lacks a record with plugin=hp (%t) or volume=db alloc=web-0 (%t):\n%s", sawPlugin, sawClaim, logs.String())
	}
}

// eventually polls cond until it holds or a generous deadline passes (a shared, loaded machine).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// jsonLines parses a JSON log, one object a line; any other line fails the test.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			if !strings.HasSuffix(s, line) { // the last line may be half written
				t.Fatalf("log line is not JSON: %v\n%s", err, line)
			}
			continue
		}
		out = append(out, rec)
	}
	return out
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// seriesLine is one sample of the text exposition format: name{labels} value.
var seriesLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)$`)

// scrape reads /metrics as Prometheus does and returns each sample by its series as exposed
// (labels sorted by name).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	code, body := get(t, "http://"+addr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		mm := seriesLine.FindStringSubmatch(line)
		if mm == nil {
			t.Fatalf("/metrics: unexpected line %q", line)
		}
		v, err := strconv.ParseFloat(mm[2], 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		out[mm[1]] = v
	}
	return out
}
