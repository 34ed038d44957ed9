package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// killNomad stands in for Nomad's HTTP API: plugin hp healthy, volumes kept by ID as registered,
// and the first registration applied but never answered (held until the test ends), so that the
// volctl sending it can be killed once Nomad has taken it.
type killNomad struct {
	mu      sync.Mutex
	index   uint64
	volumes map[string]map[string]any
	puts    int
	taken   chan struct{} // closed once the first registration is applied
	hold    chan struct{} // closed when the test ends: the held answer goes
	answer  bool          // answer every registration, the first too
}

func (n *killNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	n.index++
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(n.index, 10))
	id := strings.TrimPrefix(r.URL.Path, "/v1/volume/csi/")
	switch {
	case r.URL.Path == "/v1/plugin/csi/hp":
		n.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"ID": "hp", "Provider": "hostpath.csi.volctl.dev", "ControllerRequired": true,
			"ControllersHealthy": 1, "ControllersExpected": 1, "NodesHealthy": 1, "NodesExpected": 1})
	case r.URL.Path == "/v1/volumes": // every namespace's volumes, as stubs
		stubs := []map[string]any{}
		for _, v := range n.volumes {
			stubs = append(stubs, map[string]any{"ID": v["ID"], "Namespace": v["Namespace"], "PluginID": v["PluginID"], "ExternalID": v["ExternalID"]})
		}
		n.mu.Unlock()
		json.NewEncoder(w).Encode(stubs)
	case r.Method == http.MethodGet:
		v, ok := n.volumes[id]
		n.mu.Unlock()
		if !ok {
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(v)
	case r.Method == http.MethodPut:
		var req struct{ Volumes []map[string]any }
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || len(req.Volumes) != 1 {
			n.mu.Unlock()
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		v := req.Volumes[0]
		if v["Namespace"] == nil || v["Namespace"] == "" {
			v["Namespace"] = "default"
		}
		// A volume's topology is its first registration's topology_request.required, as
		// Nomad's: an update keeps it.
		if prev, ok := n.volumes[id]; ok {
			v["Topologies"] = prev["Topologies"]
		} else if tr, ok := v["RequestedTopologies"].(map[string]any); ok {
			v["Topologies"] = tr["Required"]
		}
		n.volumes[id] = v
		n.puts++
		first := n.puts == 1 && !n.answer
		n.mu.Unlock()
		if first {
			close(n.taken)
			<-n.hold // applied, never answered while the volctl that sent it lives
			return
		}
		w.Write([]byte("{}"))
	default:
		n.mu.Unlock()
		http.Error(w, "unexpected", http.StatusMethodNotAllowed)
	}
}

// A volctl killed (SIGKILL) after Nomad applied its registration and before it answered: the
// mark, committed before the registration was sent, stays, unsettled, so a local claim is
// refused and the release refuses Nomad's word while the outcome is unknown; the same command
// again is an update of the one volume Nomad has and settles the mark; once Nomad deregisters
// it, the release takes it back and a local claim works again.
func TestNomadRegisterKilledAfterNomadTookItConverges(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("db", spec.SingleNodeWriter)
	fake := &killNomad{volumes: map[string]map[string]any{}, taken: make(chan struct{}), hold: make(chan struct{})}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	defer close(fake.hold)
	nomadEnv := []string{"NOMAD_ADDR=" + srv.URL, "NOMAD_TOKEN=", "NOMAD_NAMESPACE=", "NOMAD_REGION="}

	cmd := exec.Command(env.volctl(), "nomad", "register", "db") // as env.run starts it
	cmd.Env = append(append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1"), nomadEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fake.taken:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the registration never reached Nomad:\n%s", out.String())
	}
	cmd.Process.Kill()
	cmd.Wait()

	claimOut, err := env.run(nomadEnv, "volume", "claim", "db", "--alloc", "local-0")
	if code := exitCode(err); code != 4 || !strings.Contains(claimOut, "volctl nomad register db") {
		t.Fatalf("claim after the kill: exit %d\n%s\nwant exit 4 naming the registration again as what finishes it", code, claimOut)
	}
	relOut, err := env.run(nomadEnv, "nomad", "release", "db")
	if code := exitCode(err); code != 4 {
		t.Fatalf("release while Nomad has the volume: exit %d\n%s\nwant exit 4", code, relOut)
	}
	again, err := env.run(nomadEnv, "nomad", "register", "db")
	if err != nil {
		t.Fatalf("register again: %v\n%s", err, again)
	}
	if !strings.Contains(again, `Updated volume "db"`) {
		t.Fatalf("register again: %q, want an update of the volume Nomad took", again)
	}
	fake.mu.Lock()
	n, puts := len(fake.volumes), fake.puts
	fake.mu.Unlock()
	if n != 1 || puts != 2 {
		t.Fatalf("Nomad has %d volume(s) after %d registrations, want 1 after 2", n, puts)
	}
	var st struct {
		Handover *struct {
			Unsettled bool `json:"unsettled"`
		} `json:"handover"`
	}
	if err := json.Unmarshal([]byte(env.ok("volume", "status", "db", "--json")), &st); err != nil || st.Handover == nil || st.Handover.Unsettled {
		t.Fatalf("volume status after the registration again: %+v (%v), want handed over, settled", st, err)
	}

	// `nomad volume deregister db`, then the take-back and a local claim.
	fake.mu.Lock()
	delete(fake.volumes, "db")
	fake.mu.Unlock()
	if out, err := env.run(nomadEnv, "nomad", "release", "db"); err != nil {
		t.Fatalf("release once Nomad deregistered it: %v\n%s", err, out)
	}
	env.ok("volume", "claim", "db", "--alloc", "local-0")
	env.ok("volume", "release", "db", "--alloc", "local-0")
}

// A `volctl nomad release` killed (SIGKILL) once it had asked the plugin what size the volume
// has (Nomad grew it while it had it), before the commit removing the handover mark and
// recording the size: the mark stays and the size is not recorded, and the release again asks
// both and records them. Before, the mark went first and the size was asked by another call
// after, so a kill between the two left the record at the size handed over for good
// (TestNomadReleaseWhoseLineCannotBePrintedStillRecordsTheSize, internal/cli).
func TestCrashTakeBackAfterTheSizeWasAsked(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newHostEnv(t)
	env.createVolume("db", spec.SingleNodeWriter)
	fake := &killNomad{volumes: map[string]map[string]any{}, taken: make(chan struct{}), hold: make(chan struct{}), answer: true}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	nomadEnv := []string{"NOMAD_ADDR=" + srv.URL, "NOMAD_TOKEN=", "NOMAD_NAMESPACE=", "NOMAD_REGION="}
	if out, err := env.run(nomadEnv, "nomad", "register", "db"); err != nil {
		t.Fatalf("nomad register db: %v\n%s", err, out)
	}
	// Nomad grows it through the plugin (a registration asking a larger capacity_min), then
	// `nomad volume deregister db`.
	c, err := csi.New(csi.Config{ControllerSocket: env.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st struct {
		ExternalID string    `json:"external_id"`
		Capacity   int64     `json:"capacity_bytes"`
		NodeOwed   int64     `json:"node_expansion_owed"`
		Handover   *struct{} `json:"handover"`
	}
	status := func() {
		t.Helper()
		st.Handover = nil
		if err := json.Unmarshal([]byte(env.ok("volume", "status", "db", "--json")), &st); err != nil {
			t.Fatal(err)
		}
	}
	status()
	if _, err := c.ControllerExpandVolume(context.Background(), csi.ControllerExpandVolumeRequest{VolumeID: st.ExternalID, CapacityMin: 2 << 20}); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	delete(fake.volumes, "db")
	fake.mu.Unlock()

	out, err := env.runBinary(bin, append([]string{engine.FailpointEnv + "=takeback:size-asked"}, nomadEnv...), "nomad", "release", "db")
	if !killed(err) {
		t.Fatalf("nomad release with failpoint takeback:size-asked: %v (want killed there)\n%s", err, out)
	}
	if status(); st.Handover == nil || st.Capacity != 1<<20 {
		t.Fatalf("after the kill: handed over %v, capacity %d; want the mark kept and nothing recorded (1MiB)", st.Handover != nil, st.Capacity)
	}
	out, err = env.run(nomadEnv, "nomad", "release", "db")
	if err != nil || !strings.Contains(out, `Volume "db" is 2MiB as its plugin lists it, grown while in Nomad (volctl had 1MiB): recorded`) {
		t.Fatalf("nomad release again: %v\n%s\nwant the take-back and the size it grew to said", err, out)
	}
	if status(); st.Handover != nil || st.Capacity != 2<<20 || st.NodeOwed != 2<<20 {
		t.Fatalf("after the release again: handed over %v, capacity %d, node expansion owed %d; want taken back at 2MiB, owed", st.Handover != nil, st.Capacity, st.NodeOwed)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
