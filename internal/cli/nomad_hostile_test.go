package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// A Nomad that is not the polite one of the captures: a small fake of the API the nomad
// commands use, which keeps the volumes registered in it per namespace, and lets a test hold a
// registration or answer it otherwise.

type fakeNomad struct {
	t   *testing.T
	srv *httptest.Server

	mu   sync.Mutex
	vols map[string]bool // "namespace/id"
	// onPut, when set, is called with each registration before it is applied; a non-zero
	// status answers it with that status (and the body) instead; a negative one says the hook
	// answered it itself.
	onPut func(w http.ResponseWriter, r *http.Request) (status int, body string)
	// onPlugin, when set, is called as each plugin lookup arrives, before it is answered.
	onPlugin func()
	// puts are the bodies of the registrations received, in order.
	puts []string
	// sent is the last volume sent for each "namespace/id" (whether or not it was taken): a
	// read answers with it, as Nomad answers with what it stored; readBack, when set, edits
	// that answer first (a Nomad that stored something else).
	sent     map[string]map[string]any
	readBack func(map[string]any)
	// notNomad404, when set, answers every read of a volume with a 404 that is not Nomad's (no
	// X-Nomad-Index header: a proxy's page).
	notNomad404 atomic.Bool
	// index, when set, is the X-Nomad-Index of every answer (1 when not).
	index atomic.Uint64
	// builds, when set, are the builds of the servers /v1/agent/members answers with (their
	// names s1, s2...), "403" for a token without node read; one server of 1.11.1 when not.
	builds []string
	// nodesDown is how many of plugin hp's nodes are not healthy: answered as
	// NodesHealthy of 1 less, down to 0, in a plugin lookup and in each volume read, as
	// Nomad answers a volume with its plugin's health.
	nodesDown atomic.Int32
	// lists counts the lists of every namespace's volumes asked (GET /v1/volumes).
	lists atomic.Int32
	// leader, when set, is the cluster's leader /v1/status/leader names (127.0.0.1:4647
	// when not): another cluster's, behind one balancer with this one.
	leader atomic.Value
	// peers, when set, are the cluster's servers /v1/status/peers names (its leader alone
	// when not, as a cluster of one server); "404" answers it 404, as a proxy that passes
	// only the volume API.
	peers atomic.Value
}

func newFakeNomad(t *testing.T) *fakeNomad {
	n := &fakeNomad{t: t, vols: map[string]bool{}, sent: map[string]map[string]any{}}
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *fakeNomad) serve(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = "default"
	}
	if n.notNomad404.Load() && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(max(n.index.Load(), 1), 10))
	switch id, ok := strings.CutPrefix(r.URL.Path, "/v1/volume/csi/"); {
	case r.URL.Path == "/v1/status/leader":
		// The cluster's leader, which a handover asks before its registration and after its
		// read-back, and a take-back around its read (nomad.Client.crossedClusters): one
		// cluster, one leader.
		leader, _ := n.leader.Load().(string)
		if leader == "" {
			leader = "127.0.0.1:4647"
		}
		fmt.Fprintf(w, "%q", leader)
	case r.URL.Path == "/v1/status/peers":
		// The cluster's servers, which a handover records in its mark and a take-back
		// compares with (nomad.Client.Peers).
		peers, _ := n.peers.Load().([]string)
		if slices.Equal(peers, []string{"404"}) {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		if peers == nil {
			leader, _ := n.leader.Load().(string)
			peers = []string{cmp.Or(leader, "127.0.0.1:4647")}
		}
		json.NewEncoder(w).Encode(peers)
	case r.URL.Path == "/v1/agent/members":
		n.mu.Lock()
		builds := n.builds
		n.mu.Unlock()
		if len(builds) == 0 {
			builds = []string{"1.11.1"}
		}
		if builds[0] == "403" {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		var members []map[string]any
		for i, b := range builds {
			members = append(members, map[string]any{"Name": fmt.Sprintf("s%d.global", i+1), "Status": "alive", "Tags": map[string]string{"build": b, "region": "global"}})
		}
		json.NewEncoder(w).Encode(map[string]any{"ServerRegion": "global", "Members": members})
	case r.URL.Path == "/v1/volumes" && r.Method == http.MethodGet:
		// Every namespace's volumes (namespace=*), as stubs of what a read answers.
		n.lists.Add(1)
		if ns != "*" || r.URL.Query().Get("type") != "csi" {
			n.t.Errorf("volume list %s: want type=csi in namespace *", r.URL)
		}
		n.mu.Lock()
		stubs := []map[string]any{}
		for _, key := range slices.Sorted(maps.Keys(n.vols)) {
			if !n.vols[key] {
				continue
			}
			vns, id, _ := strings.Cut(key, "/")
			stub := map[string]any{"ID": id, "Namespace": vns, "PluginID": "hp"}
			for _, f := range []string{"ExternalID", "PluginID"} {
				if x, ok := n.sent[key][f]; ok {
					stub[f] = x
				}
			}
			stubs = append(stubs, stub)
		}
		n.mu.Unlock()
		json.NewEncoder(w).Encode(stubs)
	case strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/"):
		if n.onPlugin != nil {
			n.onPlugin()
		}
		fmt.Fprintf(w, `{"ID":%q,"Provider":"hostpath.csi.volctl.dev","NodesHealthy":%d,"NodesExpected":1}`,
			strings.TrimPrefix(r.URL.Path, "/v1/plugin/csi/"), n.nodesHealthy())
	case strings.HasPrefix(r.URL.Path, "/v1/namespace/") && r.Method == http.MethodGet:
		// Every namespace asked of (a dry run asks whether the one it plans for exists) is here.
		fmt.Fprintf(w, `{"Name":%q}`, strings.TrimPrefix(r.URL.Path, "/v1/namespace/"))
	case ok && r.Method == http.MethodGet:
		n.mu.Lock()
		has := n.vols[ns+"/"+id]
		n.mu.Unlock()
		if !has {
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		n.mu.Lock()
		v := map[string]any{"ID": id, "Namespace": ns, "PluginID": "hp"}
		for k, x := range n.sent[ns+"/"+id] {
			v[k] = x
		}
		if mo, ok := v["MountOptions"].(map[string]any); ok {
			// Nomad answers a volume's mount flags, however many, as one "[REDACTED]"
			// (structs.CSIMountOptions.Sanitize, in every volume it encodes).
			if fl, _ := mo["MountFlags"].([]any); len(fl) > 0 {
				mo = maps.Clone(mo)
				mo["MountFlags"] = []string{"[REDACTED]"}
				v["MountOptions"] = mo
			}
		}
		v["Provider"], v["NodesHealthy"], v["NodesExpected"] = "hostpath.csi.volctl.dev", n.nodesHealthy(), 1
		if n.readBack != nil {
			n.readBack(v)
		}
		n.mu.Unlock()
		json.NewEncoder(w).Encode(v)
	case ok && r.Method == http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		var req struct{ Volumes []map[string]any }
		json.Unmarshal(body, &req)
		n.mu.Lock()
		n.puts = append(n.puts, string(body))
		if len(req.Volumes) == 1 {
			delete(req.Volumes[0], "Secrets") // Nomad does not return them
			// Nomad registers the volume the body names: the path's ID is not read.
			if bid, ok := req.Volumes[0]["ID"].(string); ok {
				id = bid
			}
			// A volume's topology is the one of its first registration (Register takes
			// topology_request.required as it; Merge never changes it).
			if prev, had := n.sent[ns+"/"+id]; had && n.vols[ns+"/"+id] {
				req.Volumes[0]["Topologies"] = prev["Topologies"]
			} else if tr, ok := req.Volumes[0]["RequestedTopologies"].(map[string]any); ok {
				req.Volumes[0]["Topologies"] = tr["Required"]
			}
			n.sent[ns+"/"+id] = req.Volumes[0]
		}
		onPut := n.onPut
		n.mu.Unlock()
		if onPut != nil {
			switch status, body := onPut(w, r); {
			case status < 0: // answered (or hung up) by the hook
				return
			case status != 0:
				http.Error(w, body, status)
				return
			}
		}
		n.mu.Lock()
		n.vols[ns+"/"+id] = true
		n.mu.Unlock()
		io.WriteString(w, `{}`)
	default:
		n.t.Errorf("unexpected Nomad request %s %s", r.Method, r.URL)
		http.Error(w, "unexpected", http.StatusTeapot)
	}
}

func (n *fakeNomad) client() (*nomad.Client, error) { return nomad.NewClient(n.srv.URL) }

// nodesHealthy is how many healthy nodes plugin hp has (nodesDown).
func (n *fakeNomad) nodesHealthy() int { return max(1-int(n.nodesDown.Load()), 0) }

// setOnPut sets the registration hook (onPut). Under the lock: the handler of a registration
// the client gave up on may still be reading it when a test changes it for the next one.
func (n *fakeNomad) setOnPut(f func(w http.ResponseWriter, r *http.Request) (status int, body string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onPut = f
}

// take registers the volume in the namespace, as a hook does that then answers otherwise.
func (n *fakeNomad) take(namespace, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.vols[namespace+"/"+id] = true
}

// deregisteredThenReleased deregisters volume db from n (namespace default), as `nomad volume
// deregister` would, then runs nomad release with the client c: the volume must be taken back.
func deregisteredThenReleased(t *testing.T, h *cliHarness, n *fakeNomad, c func() (*nomad.Client, error)) {
	t.Helper()
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
	if _, err := runNomadRelease(h, c, nil); err != nil || handedOver(t, h) {
		t.Fatalf("release once Nomad has no such volume: %v (still marked: %v)", err, handedOver(t, h))
	}
}

// answerOK answers a request OK with body, for a hook (which then returns -1).
func answerOK(w http.ResponseWriter, body string) (int, string) {
	w.Header().Set("X-Nomad-Index", "2")
	io.WriteString(w, body)
	return -1, ""
}

// hangUp answers a request by closing its connection, for a hook (returns -1): the request
// reached Nomad, which did not answer it.
func hangUp(w http.ResponseWriter, _ *http.Request) (int, string) {
	conn, _, _ := w.(http.Hijacker).Hijack()
	conn.Close()
	return -1, ""
}

// has reports whether Nomad has the volume in the namespace.
func (n *fakeNomad) has(namespace, id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.vols[namespace+"/"+id]
}

// registerIn runs volctl nomad register db against n.
func registerIn(h *cliHarness, n *fakeNomad) (string, string, error) {
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}})
	return out.String(), errOut.String(), err
}

func runNomadRelease(h *cliHarness, c func() (*nomad.Client, error), mutate func(*NomadReleaseOptions)) (string, error) {
	ios, _, out, _ := iostreams.Test()
	opts := &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: c, Volumes: []string{"db"}}
	if mutate != nil {
		mutate(opts)
	}
	err := nomadReleaseRun(context.Background(), opts)
	return out.String(), err
}

// nomad release asks the cluster the volume was handed over to, and nothing else: with
// NOMAD_ADDR pointing at another cluster, which of course has no such volume, the volume is not
// taken back while the first one still has it (two orchestrators on one volume), and the error
// says which cluster to ask.
func TestNomadReleaseAsksTheClusterItWasHandedTo(t *testing.T) {
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	if !a.has("default", "db") {
		t.Fatal("Nomad A does not have the volume after register")
	}
	out, err := runNomadRelease(h, b.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("nomad release against Nomad at %s took the volume back while Nomad at %s has it: %q, %v", b.srv.URL, a.srv.URL, out, err)
	}
	for _, want := range []string{`volume "db"`, "handed over to Nomad at " + a.srv.URL, b.srv.URL, "NOMAD_ADDR=" + a.srv.URL} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("release against another cluster: %v, want it to say %q", err, want)
		}
	}
	// Asked where it was handed over, and gone from there: taken back.
	deregisteredThenReleased(t, h, a, a.client)
}

// nomad release looks in the namespace the volume was registered in, whatever NOMAD_NAMESPACE
// says now.
func TestNomadReleaseAsksTheNamespaceItWasRegisteredIn(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMAD_NAMESPACE", "team")
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("with NOMAD_NAMESPACE=team, nomad release took back a volume Nomad has in namespace default: %v", err)
	}
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "still registered in Nomad") {
		t.Fatalf("release while Nomad has it in its namespace: %v (exit %d), want exit 4", err, ExitCode(err))
	}
}

// A volume handed over in one namespace is not registered in a second one of the same cluster:
// Nomad would then hold it twice, and the mark could name only one.
func TestNomadRegisterRefusesASecondNamespace(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMAD_NAMESPACE", "team")
	_, _, err := registerIn(h, a)
	if a.has("team", "db") {
		t.Fatalf("registered in namespace team too (err %v)", err)
	}
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "namespace default") {
		t.Fatalf("register in a second namespace: %v (exit %d), want exit 4 naming namespace default", err, ExitCode(err))
	}
	hs, _ := h.e.Handovers(h.ctx, "db")
	if len(hs) != 1 || hs[0].Namespace != "default" {
		t.Fatalf("mark after the refusal: %+v", hs)
	}
	// Nor in a region named now, when none was at the handover (the agent's own, which
	// volctl cannot tell from it).
	t.Setenv("NOMAD_NAMESPACE", "")
	t.Setenv("NOMAD_REGION", "eu")
	_, _, err = registerIn(h, a)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "region eu") {
		t.Fatalf("register in a region named now: %v (exit %d), want exit 4 naming region eu", err, ExitCode(err))
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || hs[0].Region != "" {
		t.Fatalf("mark after the refusal: %+v", hs)
	}
}

// waitsForTheLock is a command's context, and a channel told when the command reports that it
// waits for a lock another process holds.
func waitsForTheLock() (context.Context, <-chan struct{}) {
	waiting := make(chan struct{}, 1)
	return engine.WithProgress(context.Background(), func(step string) {
		if strings.Contains(step, "waiting for the lock") {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
	}), waiting
}

// nomad register and nomad release of one volume in two processes: a release that asks Nomad
// while the registration is on its way, and removes the mark after, would leave Nomad with the
// volume and volctl free to claim it. The release waits for the registration (the volume's
// lock), then finds the volume in Nomad and keeps the mark.
func TestNomadReleaseRacingRegister(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	other := openEngine(t, h.state) // the second process's engine
	released := make(chan error, 1)
	a.setOnPut(func(http.ResponseWriter, *http.Request) (int, string) {
		// The registration has reached Nomad, not applied yet: release now, from the other
		// process, and let the registration go on once the release is done or waits its turn.
		ctx, waiting := waitsForTheLock()
		go func() {
			ios, _, _, _ := iostreams.Test()
			released <- nomadReleaseRun(ctx, &NomadReleaseOptions{IO: ios, Engine: func(context.Context) (*engine.Engine, error) { return other, nil },
				Nomad: a.client, Volumes: []string{"db"}})
		}()
		select {
		case <-waiting:
		case err := <-released:
			released <- err
		case <-time.After(10 * time.Second):
			t.Error("nomad release neither finished nor waited for the lock")
		}
		return 0, ""
	})
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatalf("register: %v", err)
	}
	rerr := <-released
	if a.has("default", "db") && !handedOver(t, h) {
		t.Fatalf("Nomad has the volume and volctl no longer marks it (release: %v): both may claim it", rerr)
	}
	if ExitCode(rerr) != ExitConflict {
		t.Fatalf("release racing the registration: %v (exit %d), want exit 4: Nomad has the volume", rerr, ExitCode(rerr))
	}
}

// nomad register of one volume in two processes at once: the second waits for the first's
// registration (the volume's lock) rather than send its own beside it, finds the volume marked
// and registered, and sends an update; the volume is marked once, settled, and Nomad has it.
func TestNomadRegisterRacingRegister(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	other := openEngine(t, h.state) // the second process's engine
	second := make(chan error, 1)
	var secondOut strings.Builder
	var inFlight, most atomic.Int32
	var started, waited atomic.Bool
	a.setOnPut(func(http.ResponseWriter, *http.Request) (int, string) {
		if n := inFlight.Add(1); n > most.Load() {
			most.Store(n)
		}
		defer inFlight.Add(-1)
		if started.Swap(true) {
			return 0, ""
		}
		// The first registration has reached Nomad: the second command starts now, and this
		// one goes on once it waits for the lock (or has finished).
		ctx, waiting := waitsForTheLock()
		go func() {
			ios, _, out, _ := iostreams.Test()
			err := nomadRegisterRun(ctx, &NomadRegisterOptions{IO: ios, Engine: func(context.Context) (*engine.Engine, error) { return other, nil },
				Nomad: a.client, Volumes: []string{"db"}})
			secondOut.WriteString(out.String())
			second <- err
		}()
		select {
		case <-waiting:
			waited.Store(true)
		case err := <-second:
			second <- err
		case <-time.After(10 * time.Second):
			t.Error("the second nomad register neither finished nor waited for the lock")
		}
		return 0, ""
	})
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatalf("first register: %v", err)
	}
	if !waited.Load() {
		t.Error("the second nomad register did not wait for the first's lock")
	}
	if err := <-second; err != nil {
		t.Fatalf("second register: %v", err)
	}
	if most.Load() != 1 || len(a.puts) != 2 {
		t.Errorf("%d registrations, at most %d at once; want 2, one at a time", len(a.puts), most.Load())
	}
	if !strings.Contains(secondOut.String(), "Updated volume") {
		t.Errorf("second register: %q, want it to update the volume the first registered", secondOut.String())
	}
	hs, err := h.e.Handovers(h.ctx, "db")
	if err != nil || len(hs) != 1 || hs[0].Unsettled || !a.has("default", "db") {
		t.Fatalf("marks %+v (%v), Nomad has it: %v; want one settled mark, and Nomad to have it", hs, err, a.has("default", "db"))
	}
}

// A registration that gets no answer may have been taken: the volume stays marked, and the
// error says so and how to find out; one Nomad answered with a refusal is taken back.
func TestNomadRegisterWithoutAnAnswerKeepsTheMark(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(n *fakeNomad, w http.ResponseWriter, r *http.Request) (int, string)
		taken  bool // Nomad took the volume
		marked bool
		want   string
	}{
		{"connection dropped after Nomad took it", func(n *fakeNomad, w http.ResponseWriter, r *http.Request) (int, string) {
			n.mu.Lock()
			n.vols["default/db"] = true
			n.mu.Unlock()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return -1, ""
		}, true, true, "stays marked handed over"},
		{"gateway timeout after Nomad took it", func(n *fakeNomad, w http.ResponseWriter, r *http.Request) (int, string) {
			n.mu.Lock()
			n.vols["default/db"] = true
			n.mu.Unlock()
			return http.StatusGatewayTimeout, "upstream timed out"
		}, true, true, "stays marked handed over"},
		// Nomad has not taken it when asked right after, but may still apply it (Raft): the
		// 404 does not settle a registration it did not answer (TestNomadRegisterInFlightKeepsTheMarkOnA404).
		{"connection dropped before Nomad took it", func(n *fakeNomad, w http.ResponseWriter, r *http.Request) (int, string) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return -1, ""
		}, false, true, "may yet apply"},
		// Refused by Nomad's own check before its Raft apply; a 500 whose text is not one of
		// those keeps the mark (TestNomadRegisterUnknown500IsUnsettled).
		{"refused", func(n *fakeNomad, w http.ResponseWriter, r *http.Request) (int, string) {
			return http.StatusInternalServerError, "validation: no"
		}, false, false, "refused the registration: 500: validation: no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) { return tc.answer(a, w, r) })
			_, _, err := registerIn(h, a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("register: %v, want it to say %q", err, tc.want)
			}
			if a.has("default", "db") != tc.taken {
				t.Fatalf("fake Nomad has the volume: %v", !tc.taken)
			}
			if handedOver(t, h) != tc.marked {
				t.Fatalf("marked handed over: %v, want %v (Nomad has it: %v): %v", !tc.marked, tc.marked, tc.taken, err)
			}
		})
	}
}

// A Nomad that takes the request and never answers: the command ends, within the client's
// timeout or at Ctrl-C, says so, and the volume stays marked: Nomad's 404 right after does not
// say it will not apply a registration it did not answer.
func TestNomadHungIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
		want    string // %s: the timeout
	}{
		{"timeout", 300 * time.Millisecond, false, "no answer within %s"},
		{"ctrl-c", time.Hour, true, "interrupted before Nomad answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The timeout bounds each request, the reads before the registration too: on a
			// loaded machine one of them took longer than 300ms, and the command ended
			// before it sent the registration this test is about (its mark undone, or never
			// made). Such a run proves nothing: it is run again with twice the timeout.
			for timeout := tc.timeout; ; timeout *= 2 {
				h, sent, err := registerWithHungNomad(t, timeout, tc.cancel)
				if !sent && !tc.cancel && timeout < 20*time.Second && err != nil && strings.Contains(err.Error(), "no answer within") {
					t.Logf("a read before the registration took longer than %v (a loaded machine): again with twice that: %v", timeout, err)
					continue
				}
				want := tc.want
				if !tc.cancel {
					want = fmt.Sprintf(tc.want, timeout)
				}
				if !sent {
					t.Fatalf("register ended before it sent the registration to the hung Nomad: %v", err)
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("register against a hung Nomad: %v, want it to say %q", err, want)
				}
				// Nomad says it has no such volume, but has not said what became of the
				// registration: the mark stays.
				if !handedOver(t, h) {
					t.Error("the mark went on Nomad's 404, though Nomad may yet apply the registration it did not answer")
				}
				return
			}
		})
	}
}

// registerWithHungNomad runs nomad register of a new harness's volume against a fake Nomad
// that never answers the registration, its client's timeout set to timeout; cancel interrupts
// the command (Ctrl-C) once Nomad has the registration. It returns the harness, whether the
// registration reached Nomad, and the command's error.
func registerWithHungNomad(t *testing.T, timeout time.Duration, cancel bool) (*cliHarness, bool, error) {
	t.Helper()
	h := nomadHarness(t)
	a := newFakeNomad(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var sent atomic.Bool
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		sent.Store(true)
		if cancel {
			// Ctrl-C once Nomad has the registration, not at a fixed time: on a loaded
			// machine, 300ms came before the command had sent it ("commit: context
			// canceled").
			stop()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return http.StatusInternalServerError, "too late"
	})
	bound := 20 * time.Second // and, against the timeout, three requests' (each has its own)
	if !cancel {
		bound += 3 * timeout
	}
	done := make(chan error, 1)
	go func() {
		ios, _, _, _ := iostreams.Test()
		done <- nomadRegisterRun(ctx, &NomadRegisterOptions{IO: ios, Engine: h.engine, Volumes: []string{"db"},
			Nomad: func() (*nomad.Client, error) {
				c, err := a.client()
				if c != nil {
					c.Timeout = timeout
				}
				return c, err
			}})
	}()
	select {
	case err := <-done:
		return h, sent.Load(), err
	case <-time.After(bound):
		t.Fatalf("nomad register against a Nomad that never answers did not end (%v)", bound)
		return nil, false, nil
	}
}

// A Nomad address that answers with a redirect to another host: volctl does not follow it.
// Followed, the ACL token (X-Nomad-Token, which Go's client keeps across hosts) and the
// registration, secrets and all, went to that host, and its 404 for the volume took the volume
// back from the Nomad that has it.
func TestNomadRedirectIsNotFollowed(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "acl-token-for-a")
	h := nomadHarness(t)
	var mu sync.Mutex
	var elsewhere []string
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		elsewhere = append(elsewhere, fmt.Sprintf("%s %s token=%q body=%.80s", r.Method, r.URL.Path, r.Header.Get("X-Nomad-Token"), body))
		mu.Unlock()
		http.Error(w, "volume not found", http.StatusNotFound)
	}))
	t.Cleanup(b.Close)
	a := newFakeNomad(t)
	var redirect atomic.Bool // A's reads of volumes go to B
	a.srv.Config.Handler = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if redirect.Load() && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") {
				http.Redirect(w, r, b.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
				return
			}
			next.ServeHTTP(w, r)
		})
	}(a.srv.Config.Handler)
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		http.Redirect(w, r, b.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		return -1, ""
	})
	_, _, err := registerIn(h, a)
	if err == nil || !strings.Contains(err.Error(), "redirect to "+b.URL) {
		t.Errorf("register redirected: %v, want it to name the redirect", err)
	}
	if handedOver(t, h) {
		t.Error("a registration redirected elsewhere left the volume marked")
	}
	// Registered in A; then A's API redirects its reads to B, which has no such volume.
	a.setOnPut(nil)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	redirect.Store(true)
	_, err = runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Errorf("release took the volume back on the word of the host Nomad redirected to (%v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "redirect to "+b.URL) {
		t.Errorf("release redirected: %v, want it to name the redirect", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) > 0 {
		t.Errorf("requests reached the host Nomad redirected to:\n%s", strings.Join(elsewhere, "\n"))
	}
}

// nomad status of a handed-over volume asks where it was handed over: not another cluster
// NOMAD_ADDR names now (which would show it as not in Nomad), and in its namespace, whatever
// NOMAD_NAMESPACE says.
func TestNomadStatusAsksWhereTheVolumeWasHandedOver(t *testing.T) {
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	status := func(n *fakeNomad) (NomadVolumeStatus, error) {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client,
			Volumes: []string{"db"}, Exporter: exportFlags{JSON: true}})
		var st []NomadVolumeStatus
		if jerr := json.Unmarshal(out.Bytes(), &st); jerr != nil || len(st) != 1 {
			t.Fatalf("status output %q: %v (%v)", out, jerr, err)
		}
		return st[0], err
	}
	st, err := status(b)
	if st.Registered || err == nil || !strings.Contains(st.Error, "handed over to Nomad at "+a.srv.URL) {
		t.Errorf("status against another cluster: %+v, %v; want no answer taken from it, and the error naming %s", st, err, a.srv.URL)
	}
	t.Setenv("NOMAD_NAMESPACE", "team")
	if st, err := status(a); err != nil || !st.Registered || st.Nomad.Namespace != "default" {
		t.Errorf("status with NOMAD_NAMESPACE=team: %+v, %v; want Nomad's copy in namespace default", st, err)
	}
}

// --dry-run says that a volume handed over elsewhere (another namespace here) would be refused,
// as the registration then is.
func TestNomadRegisterDryRunSaysAnotherHandoverWouldRefuse(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMAD_NAMESPACE", "team")
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true})
	if ExitCode(err) != ExitConflict || !strings.Contains(out.String(), "it would be refused") || !strings.Contains(out.String(), "namespace default") {
		t.Fatalf("dry run of a register the mark refuses: %q, %v", out, err)
	}
}

// A volume expanded (another process) while nomad register looks at the plugin in Nomad:
// Nomad is sent the volume as it is when registered, read under the volume's lock, not as it
// was before the expand: else Nomad would schedule with the old size until the next register.
func TestNomadRegisterSendsTheVolumeAsItIsUnderTheLock(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	other := openEngine(t, h.state) // the second process's engine
	var once sync.Once
	a.onPlugin = func() {
		once.Do(func() {
			if _, err := other.ExpandVolume(context.Background(), "db", 20<<20, 0); err != nil {
				t.Errorf("expand from the other process: %v", err)
			}
		})
	}
	// --force: the expand leaves a NodeExpandVolume owed (hostpath, the volume on no path),
	// which a handover refuses without it (TestNomadRegisterOfAVolumeOwedANodeExpansion).
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, Force: true}); err != nil {
		t.Fatalf("register: %v", err)
	}
	a.mu.Lock()
	puts := a.puts
	a.mu.Unlock()
	if len(puts) != 1 {
		t.Fatalf("%d registrations sent, want 1", len(puts))
	}
	var req struct {
		Volumes []struct{ RequestedCapacityMin int64 }
	}
	if err := json.Unmarshal([]byte(puts[0]), &req); err != nil || len(req.Volumes) != 1 {
		t.Fatalf("registration %q: %v", puts[0], err)
	}
	if got := req.Volumes[0].RequestedCapacityMin; got != 20<<20 {
		t.Errorf("Nomad was sent capacity_min %d, want %d: the volume as it was before the expand", got, 20<<20)
	}
}

// nomad release and nomad status with NOMAD_ADDR naming the cluster the volume was handed
// over to, spelled otherwise (another case, a trailing slash): the same cluster, asked; not a
// refusal telling the user to set NOMAD_ADDR to what it already names.
func TestNomadReleaseAsksTheSameClusterSpelledOtherwise(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	spelled := func() (*nomad.Client, error) { return nomad.NewClient(strings.ToUpper(a.srv.URL) + "/") }
	ios, _, _, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: spelled, Volumes: []string{"db"}}); err != nil {
		t.Errorf("nomad status at %s/ of a volume handed over to %s: %v", strings.ToUpper(a.srv.URL), a.srv.URL, err)
	}
	_, err := runNomadRelease(h, spelled, nil)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "still registered in Nomad") {
		t.Fatalf("release while Nomad has it, NOMAD_ADDR spelled otherwise: %v (exit %d), want exit 4 from Nomad's answer", err, ExitCode(err))
	}
	deregisteredThenReleased(t, h, a, spelled)
}

// A volume whose spec names the default namespace goes to NOMAD_NAMESPACE's, as a job file
// that names none does (`volctl export nomad` writes none for it). The success line named
// the address alone, and a user who looked for it where the spec says (`nomad volume status
// db`, with NOMAD_NAMESPACE unset) did not find it: it says where the volume went, and why.
func TestNomadRegisterSaysTheNamespaceNOMAD_NAMESPACEChose(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	t.Setenv("NOMAD_NAMESPACE", "team")
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true})
	if err != nil || !strings.Contains(out.String(), "namespace team (NOMAD_NAMESPACE's, in place of the default one its spec names)") {
		t.Fatalf("dry run with NOMAD_NAMESPACE=team: %q, %v; want it to name namespace team", out, err)
	}
	got, _, err := registerIn(h, a)
	if err != nil || !a.has("team", "db") {
		t.Fatalf("register with NOMAD_NAMESPACE=team: %q, %v; want volume db in namespace team", got, err)
	}
	for _, want := range []string{"namespace team (NOMAD_NAMESPACE's, in place of the default one its spec names)", "nomad volume status -namespace team db"} {
		if !strings.Contains(got, want) {
			t.Errorf("register with NOMAD_NAMESPACE=team said %q; want it to say %q", got, want)
		}
	}
	// Where it goes as the spec says, nothing more is said.
	h2, b := nomadHarness(t), newFakeNomad(t)
	t.Setenv("NOMAD_NAMESPACE", "")
	if got, _, err := registerIn(h2, b); err != nil || strings.Contains(got, "namespace") {
		t.Errorf("register without NOMAD_NAMESPACE said %q, %v", got, err)
	}
}

// A volume owed a NodeExpandVolume (grown while on no path here; hostpath answers
// node_expansion_required) is refused a handover without --force, exit 4, naming the size and
// the claim that finishes it, and --dry-run says it would be refused; nothing is marked.
func TestNomadRegisterOfAVolumeOwedANodeExpansion(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, err := h.e.ExpandVolume(h.ctx, "db", 20<<20, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.NodeExpansionOwed == 0 {
		t.Fatalf("expanded volume on no path: %+v, %v; want a node expansion owed", v, err)
	}
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true})
	if ExitCode(err) != ExitConflict || !strings.Contains(out.String(), "owed a NodeExpandVolume to 20MiB, which Nomad would never send: it would be refused without --force") {
		t.Fatalf("dry run: %q, %v; want it to say the handover would be refused", out, err)
	}
	_, _, err = registerIn(h, a)
	if ExitCode(err) != ExitConflict || err == nil || !strings.Contains(err.Error(), "`volctl volume claim db --alloc expand`") {
		t.Fatalf("register: %v (exit %d), want exit 4 naming the claim that finishes the expansion", err, ExitCode(err))
	}
	if handedOver(t, h) || a.has("default", "db") {
		t.Fatalf("a refused handover left a mark or a registration")
	}
}
