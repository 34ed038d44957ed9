package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// stoppingNomad stands before the world's agent at an address of its own and forwards every
// request to it, until the nth registration: that one it forwards, so Nomad applies it, and
// then closes volctl's connection unanswered and stops listening, as a Nomad stopped part
// way through a registration does. start listens again at the same address (Nomad back).
type stoppingNomad struct {
	t    *testing.T
	addr string
	rp   *httputil.ReverseProxy

	mu   sync.Mutex
	l    net.Listener
	puts int
	n    int // the registration after which it stops; 0: never
}

func newStoppingNomad(w *nomadWorld, n int) *stoppingNomad {
	target, err := url.Parse(w.agentAddr)
	if err != nil {
		w.t.Fatal(err)
	}
	s := &stoppingNomad{t: w.t, rp: httputil.NewSingleHostReverseProxy(target), n: n}
	s.start()
	w.t.Cleanup(func() { s.stop() })
	return s
}

func (s *stoppingNomad) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.l, s.addr = l, l.Addr().String()
	go http.Serve(l, s)
}

func (s *stoppingNomad) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.l != nil {
		s.l.Close()
		s.l = nil
	}
}

func (s *stoppingNomad) url() string { return "http://" + s.addr }

func (s *stoppingNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	last := false
	if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") {
		s.puts++
		last = s.puts == s.n
	}
	s.mu.Unlock()
	if !last {
		s.rp.ServeHTTP(w, r)
		return
	}
	// Nomad applies it; volctl never hears.
	s.rp.ServeHTTP(httptestRecorder{header: http.Header{}}, r)
	s.stop()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// httptestRecorder is a ResponseWriter that drops what it is written.
type httptestRecorder struct{ header http.Header }

func (r httptestRecorder) Header() http.Header       { return r.header }
func (httptestRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (httptestRecorder) WriteHeader(int)             {}

// TestNomadRegisterAllRunAgainAfterNomadStoppedPartWay runs `volctl nomad register --all` of
// six volumes against a real Nomad 2.0.5 that stops part way: it applies the fourth
// registration and stops before answering it. The run registers the first three, keeps the
// fourth marked, its outcome unsaid, asks nothing of the fifth and sixth and names them, exit 1.
// Once Nomad is back at its address, the same command finishes the handover (the first four
// updated, with nothing said to be replaced, the last two registered) and run again changes
// nothing: every volume in Nomad once, each marked handed over.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadRegisterAllRunAgainAfterNomadStoppedPartWay(t *testing.T) {
	w, _ := startMemPluginInNomad(t, "mem")
	ids := []string{"v1", "v2", "v3", "v4", "v5", "v6"}
	w.stepTo("volctl creates six volumes of plugin mem")
	for _, id := range ids {
		w.writeFile(id+".hcl", strings.NewReplacer(`plugin_id = "hp"`, `plugin_id = "mem"`, `"db"`, fmt.Sprintf("%q", id)).Replace(dbSpec))
		w.volctl(0, "volume", "create", filepath.Join(w.dir, id+".hcl"))
	}

	w.stepTo("register --all through an address at which Nomad stops after taking the fourth")
	s := newStoppingNomad(w, 4)
	w.nomadAddr = s.url()
	out := w.volctl(1, "nomad", "register", "--all")
	for _, want := range []string{`Registered volume "v1"`, `Registered volume "v2"`, `Registered volume "v3"`,
		`volume "v4": Nomad at ` + s.url() + ` did not answer the registration`, `volumes "v5", "v6": not asked`, "volctl nomad register --all"} {
		if !strings.Contains(out, want) {
			t.Errorf("register --all, Nomad stopped after taking v4:\n%s\nwant it to say %q", out, want)
		}
	}
	marked := func() []string {
		t.Helper()
		var st []struct {
			ID         string `json:"id"`
			HandedOver bool   `json:"handed_over"`
			Registered bool   `json:"registered"`
		}
		if err := json.Unmarshal([]byte(w.volctl(0, "nomad", "status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range st {
			if v.HandedOver {
				out = append(out, v.ID)
			}
			if v.Registered != v.HandedOver {
				t.Errorf("volume %s: registered in Nomad %v, marked handed over %v", v.ID, v.Registered, v.HandedOver)
			}
		}
		return out
	}

	w.stepTo("Nomad back at its address: the same command finishes the handover")
	s.start()
	if got := strings.Join(marked(), " "); got != "v1 v2 v3 v4" {
		t.Errorf("marked handed over after the run cut short: %s, want v1 v2 v3 v4", got)
	}
	out = w.volctl(0, "nomad", "register", "--all")
	for _, want := range []string{`Updated volume "v1"`, `Updated volume "v4"`, `Registered volume "v5"`, `Registered volume "v6"`} {
		if !strings.Contains(out, want) {
			t.Errorf("register --all again:\n%s\nwant it to say %q", out, want)
		}
	}
	if strings.Contains(out, "replaced") || strings.Contains(out, "Warning") {
		t.Errorf("register --all again:\n%s\nwant nothing replaced nor warned of: Nomad had what volctl sent", out)
	}
	if got := strings.Join(marked(), " "); got != strings.Join(ids, " ") {
		t.Errorf("marked handed over after the run again: %s, want all six", got)
	}
	var vols []struct{ ID string }
	if !w.getJSON("/v1/volumes?type=csi", &vols) || len(vols) != len(ids) {
		t.Errorf("Nomad's volumes after the run again: %+v, want the six once each", vols)
	}
	if out := w.volctl(0, "nomad", "register", "--all"); strings.Count(out, "Updated volume") != len(ids) || strings.Contains(out, "Note") {
		t.Errorf("register --all a third time:\n%s\nwant the six updated, nothing noted", out)
	}

	w.stepTo("deregister the six in Nomad; volctl takes them back")
	for _, id := range ids {
		w.nomad("volume", "deregister", id)
	}
	w.volctl(0, "nomad", "release", "--all")
	w.stopMemPluginInNomad("mem")
}
