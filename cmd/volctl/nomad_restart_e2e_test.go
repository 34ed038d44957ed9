package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestNomadHandoverWhileTheAgentRestarts hands volumes a, b and c over to a real Nomad (a
// server and client keeping its state on disk) with `volctl nomad register --all`, while:
// Nomad's registration of b waits in the plugin's ControllerValidateVolumeCapabilities; another
// volctl process claims b (refused: it is being handed over) and c (not asked yet: granted);
// and the agent is killed and started again, b's registration unanswered. What the docs
// promise must hold at every step: no volume both volctl's to claim and in Nomad, and none
// neither's but one a re-run of the command finishes (its mark unsettled); the re-run
// finishes b, refuses c for its live local claim (exit 4), and once that claim is released,
// hands c over too.
//
// Opt-in: NOMAD_BIN names a Nomad binary. Root: c's local claim mounts.
func TestNomadHandoverWhileTheAgentRestarts(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the handover against a real agent restarted part way")
	}
	if os.Geteuid() != 0 {
		t.Skip("the local claim of c mounts (the plugin bind-mounts as a real one does): it needs root")
	}
	if err := hostpathtest.CanMount(); err != nil {
		t.Skipf("bind mounts are not allowed here: %v", err)
	}
	w := makeNomadWorld(t, 5*time.Minute)
	w.persistent = true
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	cfg.MountRoot = filepath.Join(w.dir, "memroot")
	mem := csitest.NewMemPlugin(cfg)
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		mem.AddVolume(csi.Volume{ID: "ext-" + id, CapacityBytes: 1 << 20})
	}
	// Once armed, the first validation of b's storage (Nomad's, for its registration) waits
	// until Nomad gives up on it (the agent killed) or the test ends.
	var armed atomic.Bool
	held := make(chan struct{})
	var once sync.Once
	hold := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.ValidateVolumeCapabilitiesRequest); ok && armed.Load() && r.GetVolumeId() == "ext-b" {
			first := false
			once.Do(func() { first = true; close(held) })
			if first {
				select {
				case <-ctx.Done():
				case <-w.ctx.Done():
				}
				return nil, status.Error(codes.Unavailable, "the test held this validation until its caller went away")
			}
		}
		return handler(ctx, req)
	}
	socket := w.serveMemAndStart(mem, hold, "start a nomad agent (server and client, its state on disk)")
	w.stepTo("run plugin mem in Nomad; volctl registers volumes a, b and c")
	w.runLinkedPlugins("mem-plugin", socket, []string{"mem"})
	w.volctl(0, "plugin", "register", "--id", "mem", "--socket", socket)
	for _, id := range ids {
		w.writeFile(id+".hcl", fmt.Sprintf(`id = %q
name = %q
type = "csi"
plugin_id = "mem"
external_id = "ext-%s"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`, id, id, id))
		w.volctl(0, "volume", "register", filepath.Join(w.dir, id+".hcl"))
	}

	// owners checks the promise for every volume: marked handed over (not volctl's to claim)
	// exactly when Nomad has it, but for one whose mark is unsettled (a registration Nomad may
	// still apply, which the command run again finishes) when unsettledOK.
	owners := func(when string, unsettledOK bool) (inNomad, marked map[string]bool) {
		t.Helper()
		inNomad, marked = map[string]bool{}, map[string]bool{}
		for _, id := range ids {
			var v struct{ ID string }
			inNomad[id] = w.getJSON("/v1/volume/csi/"+url.PathEscape(id), &v) && v.ID == id
			var st struct {
				Handover *struct {
					Unsettled bool `json:"unsettled"`
				} `json:"handover"`
			}
			if err := json.Unmarshal([]byte(w.volctl(0, "volume", "status", id, "--json")), &st); err != nil {
				t.Fatalf("%s: volume status %s: %v", when, id, err)
			}
			marked[id] = st.Handover != nil
			switch {
			case inNomad[id] && !marked[id]:
				t.Errorf("%s: volume %q is in Nomad and volctl's to claim (no handover mark)", when, id)
			case !inNomad[id] && marked[id] && !(unsettledOK && st.Handover.Unsettled):
				t.Errorf("%s: volume %q is marked handed over (unsettled %v) and Nomad has it not: neither's", when, id, st.Handover.Unsettled)
			}
		}
		return inNomad, marked
	}
	owners("before the handover", false)

	w.stepTo("volctl nomad register --all, b's registration held in the plugin")
	armed.Store(true)
	reg := exec.CommandContext(w.ctx, "volctl", "nomad", "register", "--all")
	reg.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+w.state, "NOMAD_ADDR="+w.nomadAddr, "NO_COLOR=1")
	var regOut bytes.Buffer
	reg.Stdout, reg.Stderr = &regOut, &regOut
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	regDone := make(chan error, 1)
	go func() { regDone <- reg.Wait() }()
	select {
	case <-held:
	case err := <-regDone:
		t.Fatalf("nomad register --all ended (%v) before Nomad validated b:\n%s", err, regOut.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("Nomad never validated b's storage:\n%s", regOut.String())
	}

	w.stepTo("another process claims b (being handed over: refused) and c (not asked yet: granted)")
	if out := w.volctl(4, "volume", "claim", "b", "--alloc", "local-b"); !strings.Contains(out, "Nomad") {
		t.Errorf("claim of b while its registration runs:\n%s\nwant it refused, naming its handover to Nomad", out)
	}
	w.volctl(0, "volume", "claim", "c", "--alloc", "local-c")

	w.stepTo("kill the agent while it validates b, and start it again")
	w.restartAgent()
	var regErr error
	select {
	case regErr = <-regDone:
	case <-time.After(2 * time.Minute):
		t.Fatalf("nomad register --all did not end once the agent was killed:\n%s", regOut.String())
	}
	t.Logf("nomad register --all, the agent killed part way: %v\n%s", regErr, regOut.String())
	if exitCode(regErr) != 1 || !strings.Contains(regOut.String(), "volctl nomad register --all") {
		t.Errorf("nomad register --all with the agent killed part way: exit %d\n%s\nwant exit 1 naming the command that finishes it", exitCode(regErr), regOut.String())
	}
	w.poll(`plugin "mem" to be healthy in Nomad again`, 90*time.Second, func() bool {
		var p struct{ NodesHealthy, ControllersHealthy int }
		return w.getJSON("/v1/plugin/csi/mem", &p) && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})
	inNomad, _ := owners("after the agent's restart", true)
	if !inNomad["a"] {
		t.Fatalf("Nomad lost volume a across its restart: the test's agent does not keep its state")
	}

	w.stepTo("volctl nomad register --all again: b finished, c refused for its live local claim")
	// For a while after its restart, Nomad answers a registration "controller validate volume:
	// No path to node" (its server not yet connected to its client again), or says the plugin
	// is not healthy (its client fingerprinting it again): the command exits 1 and says to run
	// it again, or to wait, as a user then does, and the promise holds after each run.
	var out string
	for deadline := time.Now().Add(90 * time.Second); ; {
		var err error
		out, err = rerunVolctl(w, "nomad", "register", "--all")
		owners("after a re-run", true)
		if exitCode(err) != 1 || time.Now().After(deadline) {
			if exitCode(err) != 4 {
				t.Fatalf("volctl nomad register --all again: exit %d, want 4 (c refused, the rest done)\n%s", exitCode(err), out)
			}
			break
		}
		if !strings.Contains(out, "run the command again") && !strings.Contains(out, "wait for") {
			t.Errorf("volctl nomad register --all while Nomad comes back: exit 1\n%s\nwant it to say to run it again, or what to wait for", out)
		}
		t.Logf("Nomad is not back yet; running it again:\n%s", out)
		time.Sleep(2 * time.Second)
	}
	if !strings.Contains(out, `volume "c"`) || !strings.Contains(out, "live local claim") {
		t.Errorf("register --all again:\n%s\nwant c refused for its live local claim", out)
	}
	inNomad, marked := owners("after the re-run", false)
	if !inNomad["b"] || !marked["b"] || inNomad["c"] || marked["c"] {
		t.Errorf("after the re-run: in Nomad %v, marked %v; want b in Nomad and marked, c neither", inNomad, marked)
	}

	w.stepTo("release c's claim; register --all again hands c over")
	w.volctl(0, "volume", "release", "c", "--alloc", "local-c")
	w.volctl(0, "nomad", "register", "--all")
	if inNomad, marked := owners("at the end", false); !inNomad["c"] || !marked["c"] {
		t.Errorf("at the end: in Nomad %v, marked %v; want c in Nomad and marked", inNomad, marked)
	}
	w.stopMemPluginInNomad("mem")
}

// rerunVolctl runs volctl in the world w as w.volctl does, whatever its exit: its output
// (stdout, then stderr) and its error.
func rerunVolctl(w *nomadWorld, args ...string) (string, error) {
	cmd := exec.CommandContext(w.ctx, "volctl", args...)
	cmd.Env = append(append(os.Environ(), "VOLCTL_STATE_DIR="+w.state, "NOMAD_ADDR="+w.nomadAddr, "NO_COLOR=1"), w.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String() + stderr.String(), err
}
