package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// Contract tests: the nomad commands against an httptest server replaying what a real Nomad
// agent answered (testdata/nomad/README.md says how the captures were made).

type nomadExchange struct {
	Step    string `json:"step"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Request string `json:"request,omitempty"`
	Status  int    `json:"status"`
	Body    string `json:"body"`
}

func loadExchanges(t *testing.T, file string) []nomadExchange {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "nomad", file))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Exchanges []nomadExchange `json:"exchanges"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Exchanges
}

// step returns the captured exchanges of one step of the end-to-end run.
func step(t *testing.T, name string) []nomadExchange {
	t.Helper()
	var out []nomadExchange
	for _, file := range []string{"nomad-captures.json", "nomad-refusals.json"} {
		for _, e := range loadExchanges(t, file) {
			if e.Step == name {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no captured exchanges for step %q", name)
	}
	return out
}

// replayNomad serves exchanges in order, matched by method and path; a request with no
// exchange left fails the test. It records what volctl sent.
type replayNomad struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	left     []nomadExchange
	requests []nomadExchange
}

func newReplayNomad(t *testing.T, exchanges ...nomadExchange) *replayNomad {
	r := &replayNomad{t: t, left: exchanges}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests = append(r.requests, nomadExchange{Method: req.Method, Path: req.URL.Path, Request: string(body)})
		for i, e := range r.left {
			if e.Method == req.Method && e.Path == req.URL.Path {
				r.left = append(r.left[:i:i], r.left[i+1:]...)
				if e.Status == http.StatusOK {
					w.Header().Set("Content-Type", "application/json")
				}
				if e.Status == http.StatusOK || e.Status == http.StatusNotFound {
					// Nomad sets it on every answer to a query it ran, its 404 for a volume or
					// plugin it does not have included (the captures hold no headers).
					w.Header().Set("X-Nomad-Index", "1")
				}
				w.WriteHeader(e.Status)
				io.WriteString(w, e.Body)
				return
			}
		}
		if req.Method == http.MethodGet && req.URL.Path == "/v1/volumes" {
			// The list of every namespace's volumes that volctl asks before a registration
			// (nomad.Client.Twins) came after the captures: answered as Nomad with no
			// volume of the storage but the one registered (its answer's shape is checked
			// against a real Nomad by TestNomadRegisterRefusesAVolumeWhoseStorageNomadHasAsAnother
			// in cmd/volctl).
			w.Header().Set("X-Nomad-Index", "1")
			io.WriteString(w, "[]")
			return
		}
		if req.Method == http.MethodGet && req.URL.Path == "/v1/plugins" && req.URL.Query().Get("type") == "csi" {
			// The list of Nomad's CSI plugins volctl asks when Nomad has none by the volume's
			// plugin ID (otherPluginIDs) came after the captures too: answered as Nomad running
			// none, as in the captures that have no plugin (TestNomadEndToEnd asks a real one).
			w.Header().Set("X-Nomad-Index", "1")
			io.WriteString(w, "[]")
			return
		}
		if req.Method == http.MethodGet && req.URL.Path == "/v1/status/leader" {
			// The cluster's leader, which a handover asks before its registration and after
			// its read-back (nomad.Client.crossedClusters), came after the captures too:
			// answered as a cluster's one leader.
			io.WriteString(w, `"127.0.0.1:4647"`)
			return
		}
		if req.Method == http.MethodGet && req.URL.Path == "/v1/status/peers" {
			// The cluster's servers, which a handover records in its mark and a take-back,
			// status and a plan compare with (nomad.Client.Peers), came after the captures too:
			// answered as that leader's cluster of one server (its answer's shape is checked
			// against a real Nomad by TestNomadHandoverRecordsTheClustersServers in cmd/volctl).
			io.WriteString(w, `["127.0.0.1:4647"]`)
			return
		}
		t.Errorf("unexpected Nomad request %s %s", req.Method, req.URL.Path)
		http.Error(w, "no captured exchange", http.StatusTeapot)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replayNomad) client() (*nomad.Client, error) { return nomad.NewClient(r.srv.URL) }

func (r *replayNomad) sent(method string) []nomadExchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []nomadExchange
	for _, q := range r.requests {
		if q.Method == method {
			out = append(out, q)
		}
	}
	return out
}

// edit returns the exchanges with fn applied to the JSON body of the one for method and path.
func edit(t *testing.T, ex []nomadExchange, method, path string, fn func(map[string]any)) []nomadExchange {
	t.Helper()
	out := append([]nomadExchange(nil), ex...)
	for i, e := range out {
		if e.Method == method && e.Path == path && e.Status == http.StatusOK {
			var m map[string]any
			d := json.NewDecoder(strings.NewReader(e.Body))
			d.UseNumber() // MaxVolumes is MaxInt64, which a float64 would round
			if err := d.Decode(&m); err != nil {
				t.Fatal(err)
			}
			fn(m)
			b, _ := json.Marshal(m)
			out[i].Body = string(b)
			return out
		}
	}
	t.Fatalf("no exchange %s %s to edit", method, path)
	return nil
}

// asHarnessVolume returns the exchanges with each 200 answer to a read of volume db carrying the
// harness volume's external ID: the captures are of the end-to-end run's volume, and volctl
// does not register over a volume of the ID with another one.
func asHarnessVolume(t *testing.T, h *cliHarness, ex []nomadExchange) []nomadExchange {
	t.Helper()
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	out := append([]nomadExchange(nil), ex...)
	for i := range out {
		if e := out[i]; e.Method == http.MethodGet && e.Path == "/v1/volume/csi/db" && e.Status == http.StatusOK {
			out[i] = edit(t, []nomadExchange{e}, e.Method, e.Path, func(m map[string]any) { m["ExternalID"] = info.ExternalID })[0]
		}
	}
	return out
}

// registerStep is the exchanges of a registration: the captured step, and Nomad's answer to
// reading the volume back after it, its copy as the next step of the run read it.
func registerStep(t *testing.T, h *cliHarness, name string) []nomadExchange {
	t.Helper()
	back := step(t, "volctl nomad status shows the write claim")[0]
	return asHarnessVolume(t, h, append(step(t, name), back))
}

// nomadHarness is the volume of the end-to-end run, "db" on hostpath plugin "hp" (node n1),
// in a fresh state dir. The plugin mounts for real (volctl insists a published target is a
// mount point), and whatever is mounted under the state dir at the end is unmounted.
func nomadHarness(t *testing.T) *cliHarness {
	t.Helper()
	return nomadHarnessWith(t, hostpath.Config{NodeID: "n1"})
}

// nomadHarnessWith is nomadHarness with its hostpath plugin configured as cfg.
func nomadHarnessWith(t *testing.T, cfg hostpath.Config) *cliHarness {
	t.Helper()
	requireMount(t) // its hostpath plugin mounts what the tests claim
	h := newCLIHarness(t)
	t.Cleanup(func() {
		if err := hostpath.UnmountAll(h.state); err != nil {
			t.Errorf("cleaning up mounts: %v", err)
		}
	})
	srv := hostpathtest.Start(t, cfg)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: strings.TrimPrefix(srv.Endpoint, "unix://")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	return h
}

func runNomadRegister(h *cliHarness, r *replayNomad, mutate func(*NomadRegisterOptions)) (string, string, error) {
	ios, _, out, errOut := iostreams.Test()
	opts := &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: r.client, Volumes: []string{"db"}}
	if mutate != nil {
		mutate(opts)
	}
	err := nomadRegisterRun(context.Background(), opts)
	return out.String(), errOut.String(), err
}

func handedOver(t *testing.T, h *cliHarness) bool {
	t.Helper()
	hs, err := h.e.Handovers(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	return len(hs) == 1
}

// Registering sends Nomad the volume as volctl has it — external ID, capabilities, the plugin's
// topology as the requested required topology, capacity — marks it handed over, and from then
// on volctl refuses to claim it, naming the Nomad address.
func TestNomadRegisterContract(t *testing.T) {
	h := nomadHarness(t)
	info, _ := h.e.Volume(h.ctx, "db")
	r := newReplayNomad(t, registerStep(t, h, "volctl nomad register")...)
	out, _, err := runNomadRegister(h, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Registered volume %q in Nomad at %s", "db", r.srv.URL); !strings.Contains(out, want) {
		t.Errorf("stdout %q lacks %q", out, want)
	}
	puts := r.sent(http.MethodPut)
	if len(puts) != 1 {
		t.Fatalf("%d registrations sent, want 1", len(puts))
	}
	var req struct {
		Volumes []struct {
			ID, ExternalID, PluginID, Namespace string
			RequestedCapacityMin                int64
			RequestedCapabilities               []struct{ AccessMode, AttachmentMode string }
			RequestedTopologies                 struct {
				Required []struct{ Segments map[string]string }
			}
			MountOptions *struct{ FSType string }
		}
	}
	if err := json.Unmarshal([]byte(puts[0].Request), &req); err != nil {
		t.Fatal(err)
	}
	v := req.Volumes[0]
	if v.ID != "db" || v.ExternalID != info.ExternalID || v.PluginID != "hp" || v.Namespace != "default" ||
		v.RequestedCapacityMin != 10<<20 || len(v.RequestedCapabilities) != 1 || v.RequestedCapabilities[0].AccessMode != "single-node-writer" ||
		len(v.RequestedTopologies.Required) != 1 || v.RequestedTopologies.Required[0].Segments[hostpath.TopologyKey] != "n1" {
		t.Errorf("registration sent: %s", puts[0].Request)
	}
	if !handedOver(t, h) {
		t.Fatal("the volume is not marked handed over")
	}
	_, err = h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"})
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "handed over to Nomad at "+r.srv.URL) {
		t.Fatalf("local claim after register: %v (exit %d)", err, ExitCode(err))
	}
}

// --dry-run says what would be registered and changes nothing, in Nomad or here.
func TestNomadRegisterDryRunContract(t *testing.T) {
	h := nomadHarness(t)
	r := newReplayNomad(t, step(t, "volctl nomad register --dry-run")...)
	out, _, err := runNomadRegister(h, r, func(o *NomadRegisterOptions) { o.DryRun = true })
	if err != nil || !strings.Contains(out, `Would register volume "db" in Nomad at `+r.srv.URL) {
		t.Fatalf("dry run: %q, %v", out, err)
	}
	if n := len(r.sent(http.MethodPut)); n != 0 || handedOver(t, h) {
		t.Fatalf("dry run sent %d registrations, marked=%v", n, handedOver(t, h))
	}
}

// Registering again while Nomad uses the volume is an update, and sends mount options even when
// there are none: Nomad stores an empty mount_options and refuses a nil one while the volume is
// in use ("can not update mount options while volume is in use", in nomad-refusals.json).
func TestNomadRegisterUpdateInUseContract(t *testing.T) {
	h := nomadHarness(t)
	ex := registerStep(t, h, "registering again while Nomad uses it is an update")
	refusal := step(t, "update in use with nil mount options")[0]
	var r *replayNomad
	r = newReplayNomad(t, ex...)
	// Nomad's rule, from the refusal it answered: a nil MountOptions is refused.
	r.srv.Config.Handler = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method == http.MethodPut {
				body, _ := io.ReadAll(req.Body)
				req.Body = io.NopCloser(strings.NewReader(string(body)))
				if strings.Contains(string(body), `"MountOptions":null`) {
					r.mu.Lock()
					r.requests = append(r.requests, nomadExchange{Method: req.Method, Path: req.URL.Path, Request: string(body)})
					r.mu.Unlock()
					w.WriteHeader(refusal.Status)
					io.WriteString(w, refusal.Body)
					return
				}
			}
			next.ServeHTTP(w, req)
		})
	}(r.srv.Config.Handler)
	out, _, err := runNomadRegister(h, r, nil)
	if err != nil {
		t.Fatalf("register while in use: %v", err)
	}
	if !strings.Contains(out, `Updated volume "db"`) {
		t.Errorf("stdout %q does not say it was an update", out)
	}
}

// Refusals: the plugin missing, unhealthy or another driver in Nomad, and Nomad refusing the
// registration. Nothing stays marked, and the error names the volume, the address and what
// Nomad said.
func TestNomadRegisterRefusedContract(t *testing.T) {
	registered := step(t, "volctl nomad register")
	for _, tc := range []struct {
		name     string
		exchange func(t *testing.T) []nomadExchange
		want     []string
	}{
		{"plugin missing", func(t *testing.T) []nomadExchange {
			return step(t, "register before the plugin runs in Nomad: refused")
		},
			[]string{`volume "db"`, `plugin "hp" does not run in Nomad at`}},
		{"plugin unhealthy", func(t *testing.T) []nomadExchange {
			return edit(t, registered, "GET", "/v1/plugin/csi/hp", func(m map[string]any) { m["NodesHealthy"] = 0 })
		}, []string{`volume "db"`, `plugin "hp" in Nomad at`, "is not healthy (nodes 0/1 healthy"}},
		{"another driver", func(t *testing.T) []nomadExchange {
			return edit(t, registered, "GET", "/v1/plugin/csi/hp", func(m map[string]any) { m["Provider"] = "ebs.csi.aws.com" })
		}, []string{`volume "db"`, `is driver "ebs.csi.aws.com", but here it is "hostpath.csi.volctl.dev"`}},
		{"Nomad refuses", func(t *testing.T) []nomadExchange {
			// Then Nomad, asked whether it took the volume after all, says it has none.
			return append(append(registered[:2:2], step(t, "register refused")...), step(t, "volctl nomad release")...)
		}, []string{`volume "db"`, "refused the registration: 500: unable to update volume", "volume external ID cannot be updated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			r := newReplayNomad(t, tc.exchange(t)...)
			_, _, err := runNomadRegister(h, r, nil)
			if err == nil {
				t.Fatal("registered")
			}
			for _, w := range append(tc.want, r.srv.URL) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if handedOver(t, h) {
				t.Error("a refused registration left the volume marked handed over")
			}
			if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
				t.Errorf("volctl cannot claim the volume after a refused registration: %v", err)
			}
		})
	}
}

// A volume with live local claims is not handed over (exit 4, naming them) unless forced.
func TestNomadRegisterLiveClaimsContract(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
		t.Fatal(err)
	}
	r := newReplayNomad(t, registerStep(t, h, "volctl nomad register")...)
	_, _, err := runNomadRegister(h, r, nil)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), `alloc "local-0"`) {
		t.Fatalf("register with a live claim: %v (exit %d), want exit 4 naming the claim", err, ExitCode(err))
	}
	if n := len(r.sent(http.MethodPut)); n != 0 || handedOver(t, h) {
		t.Fatalf("refused handover sent %d registrations, marked=%v", n, handedOver(t, h))
	}
	r = newReplayNomad(t, registerStep(t, h, "volctl nomad register")...)
	if _, _, err := runNomadRegister(h, r, func(o *NomadRegisterOptions) { o.Force = true }); err != nil {
		t.Fatalf("--force: %v", err)
	}
}

// A volume whose live local claims hold an attachment (its plugin served with --enable-attach)
// is not handed over even with --force: Nomad would send ControllerUnpublishVolume for this node
// when one of its allocs' claims ends, detaching the volume from under them. Exit 4, naming the
// claim, nothing sent, no mark; --dry-run --force says so too.
func TestNomadRegisterForcedRefusesClaimsHoldingAnAttachment(t *testing.T) {
	h := nomadHarnessWith(t, hostpath.Config{NodeID: "n1", EnableAttach: true})
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
		t.Fatal(err)
	}
	force := func(o *NomadRegisterOptions) { o.Force = true }
	r := newReplayNomad(t, registerStep(t, h, "volctl nomad register")...)
	out, _, err := runNomadRegister(h, r, func(o *NomadRegisterOptions) { o.Force, o.DryRun = true, true })
	if ExitCode(err) != ExitConflict || !strings.Contains(out, `recorded as attached to node "n1": it would be refused, --force or not`) {
		t.Fatalf("--dry-run --force: %v, out %q; want it to say the forced handover would be refused", err, out)
	}
	r = newReplayNomad(t, registerStep(t, h, "volctl nomad register")...)
	_, _, err = runNomadRegister(h, r, force)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), `alloc "local-0"`) || !strings.Contains(err.Error(), "ControllerUnpublishVolume") {
		t.Fatalf("--force with a claim holding the attachment: %v (exit %d), want exit 4 naming the claim and why", err, ExitCode(err))
	}
	if n := len(r.sent(http.MethodPut)); n != 0 || handedOver(t, h) {
		t.Fatalf("refused handover sent %d registrations, marked=%v", n, handedOver(t, h))
	}
}

// Status shows the local volume beside Nomad's: registered, schedulable, plugin health, the
// allocs that claim it.
func TestNomadStatusContract(t *testing.T) {
	h := nomadHarness(t)
	run := func(r *replayNomad) []NomadVolumeStatus {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		opts := &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: r.client, Volumes: []string{"db"}, Exporter: exportFlags{JSON: true}}
		if err := nomadStatusRun(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		var st []NomadVolumeStatus
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// The capture's volume as the harness's (its external ID): Nomad's volume of another
	// external ID is another volume, which status does not show as this one.
	st := run(newReplayNomad(t, asHarnessVolume(t, h, step(t, "volctl nomad status shows the write claim"))...))
	n := st[0].Nomad
	if len(st) != 1 || !st[0].Registered || n == nil || !n.Schedulable || len(n.WriteAllocs) != 1 || len(n.ReadAllocs) != 0 ||
		!n.Plugin.Healthy() || n.Plugin.NodesHealthy != 1 || len(n.Allocs) != 1 || !strings.HasPrefix(n.Allocs[0].Name, "web.web[0]") {
		t.Fatalf("status while claimed: %+v %+v", st, n)
	}
	if st[0].NomadNamespace != "default" || len(st[0].AnotherVolume) > 0 || len(st[0].Differs) > 0 {
		t.Fatalf("status of the volume as Nomad registered it: asked in %q, another volume %q, differs %q; want default and none", st[0].NomadNamespace, st[0].AnotherVolume, st[0].Differs)
	}
	st = run(newReplayNomad(t, step(t, "volctl nomad status after deregister")...))
	if st[0].Registered || st[0].Nomad != nil {
		t.Fatalf("status after deregister: %+v", st)
	}
}

// Release takes the volume back only once Nomad no longer has it.
func TestNomadReleaseContract(t *testing.T) {
	h := nomadHarness(t)
	// One Nomad, the one the volume is handed over to (release asks only that one), answering
	// first that it has the volume, then, deregistered, that it has not.
	r := newReplayNomad(t, asHarnessVolume(t, h, append(step(t, "release before Nomad lets go: refused"), step(t, "volctl nomad release")...))...)
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: r.srv.URL}, false, nil); err != nil {
		t.Fatal(err)
	}
	run := func(r *replayNomad) (string, error) {
		ios, _, out, _ := iostreams.Test()
		err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: r.client, Volumes: []string{"db"}})
		return out.String(), err
	}
	if _, err := run(r); ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "nomad volume deregister db") ||
		!strings.Contains(err.Error(), r.srv.URL) || !strings.Contains(err.Error(), "1 claim(s)") {
		t.Fatalf("release while registered: %v (exit %d)", err, ExitCode(err))
	}
	if !handedOver(t, h) {
		t.Fatal("a refused release removed the mark")
	}
	if out, err := run(r); err != nil || !strings.Contains(out, `Took volume "db" back`) {
		t.Fatalf("release after deregister: %q, %v", out, err)
	}
	if handedOver(t, h) {
		t.Fatal("the mark survived the release")
	}
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
		t.Fatalf("claim after release: %v", err)
	}
}

// Nomad not answering: the error names the volume and the address and says what to check;
// nothing is marked.
func TestNomadUnreachable(t *testing.T) {
	h := nomadHarness(t)
	addr := unansweredAddress(t)
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Volumes: []string{"db"},
		Nomad: func() (*nomad.Client, error) { return nomad.NewClient(addr) }})
	for _, want := range []string{`volume "db"`, "Nomad at " + addr, "is Nomad running there?"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("register with Nomad down: %v, want it to say %q", err, want)
		}
	}
	if handedOver(t, h) {
		t.Error("the volume was marked handed over")
	}
}

// Nor is a volume taken back while the Nomad it was handed over to does not answer: no word
// either way, so the mark stays, and the error says what to run once it answers, and what if
// the cluster is gone.
func TestNomadReleaseWhileNomadIsUnreachableKeepsTheMark(t *testing.T) {
	h := nomadHarness(t)
	addr := unansweredAddress(t)
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: addr}, false, nil); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Volumes: []string{"db"},
		Nomad: func() (*nomad.Client, error) { return nomad.NewClient(addr) }})
	if !handedOver(t, h) {
		t.Fatalf("release with Nomad down took the volume back: %v", err)
	}
	for _, want := range []string{`volume "db"`, "Nomad at " + addr, "is Nomad running there?", "stays marked handed over", "volctl nomad release db` again", "--force"} {
		if ExitCode(err) != ExitError || !strings.Contains(err.Error(), want) {
			t.Errorf("release with Nomad down: %v (exit %d), want exit 1 saying %q", err, ExitCode(err), want)
		}
	}
}

// unansweredAddress is an http:// address on which nothing listens.
func unansweredAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // nothing listens there once the test has it
	return "http://" + l.Addr().String()
}

// The table names the claiming allocs as Nomad does, with a short ID.
func TestNomadStatusTableContract(t *testing.T) {
	h := nomadHarness(t)
	r := newReplayNomad(t, asHarnessVolume(t, h, step(t, "volctl nomad status shows the write claim"))...)
	ios, _, out, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: r.client}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "VOLUME") {
		t.Fatalf("table:\n%s", out)
	}
	for _, want := range []string{"db", "yes", "nodes 1/1 healthy, controllers 1/1 healthy", "web.web[0] ("} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
}
