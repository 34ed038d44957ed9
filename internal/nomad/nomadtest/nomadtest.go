// Package nomadtest holds fakes of Nomad's HTTP API for tests: a cluster as a handover and a
// take-back ask it (its leader and servers, its CSI volumes, its Raft index), load balancers
// before several clusters (one that sends each request to the next, one that keeps a client on
// one of them, one that routes the status endpoints to one and the rest to another), and a
// Nomad that refuses every request, for what is shown of the address and credentials it was
// given. No volctl code imports it.
package nomadtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Cluster is one Nomad cluster as volctl's handover and take-back ask it: its leader (GET
// /v1/status/leader), its CSI volumes of the default namespace as registered (PUT, DELETE and
// GET /v1/volume/csi/ID, GET /v1/volumes listing them), and its Raft index, each answer's
// X-Nomad-Index. A volume it does not have is answered 404 at Idle404, which a busy cluster has
// far ahead of another's index.
type Cluster struct {
	// Leader is what /v1/status/leader answers; "" answers it 404, as a proxy that passes
	// only the volume API.
	Leader  string
	Idle404 uint64
	// Peers are what /v1/status/peers answers (the cluster's servers); none answers it 404,
	// as a proxy that passes only the volume API.
	Peers []string

	mu    sync.Mutex
	index uint64
	vols  map[string]json.RawMessage
	puts  int
}

// NewCluster is a cluster led by leader at Raft index index, answering 404 at idle404.
func NewCluster(leader string, index, idle404 uint64) *Cluster {
	return &Cluster{Leader: leader, Idle404: idle404, index: index, vols: map[string]json.RawMessage{}}
}

func (f *Cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.index, 10))
	id, vol := strings.CutPrefix(r.URL.Path, "/v1/volume/csi/")
	switch {
	case r.URL.Path == "/v1/status/leader" && f.Leader == "":
		http.Error(w, "404 page not found", http.StatusNotFound)
	case r.URL.Path == "/v1/status/leader":
		json.NewEncoder(w).Encode(f.Leader)
	case r.URL.Path == "/v1/status/peers" && f.Peers == nil:
		http.Error(w, "404 page not found", http.StatusNotFound)
	case r.URL.Path == "/v1/status/peers":
		json.NewEncoder(w).Encode(f.Peers)
	case r.URL.Path == "/v1/volumes":
		stubs := []map[string]any{}
		for _, v := range f.vols {
			var stub map[string]any
			json.Unmarshal(v, &stub)
			stubs = append(stubs, map[string]any{"ID": stub["ID"], "Namespace": "default", "PluginID": stub["PluginID"], "ExternalID": stub["ExternalID"]})
		}
		json.NewEncoder(w).Encode(stubs)
	case vol && r.Method == http.MethodPut:
		var req struct{ Volumes []json.RawMessage }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		f.index++
		f.puts++
		f.vols[id] = req.Volumes[0]
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.index, 10))
		io.WriteString(w, `{}`)
	case vol && r.Method == http.MethodDelete && f.vols[id] != nil:
		f.index++
		delete(f.vols, id)
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.index, 10))
	case vol && r.Method == http.MethodDelete:
		// Nomad's state store: "volume not found: ID", as the RPC's error, a 500.
		http.Error(w, "rpc error: volume not found: "+id, http.StatusInternalServerError)
	case vol && f.vols[id] != nil:
		w.Write(f.vols[id])
	case vol:
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.Idle404, 10))
		http.Error(w, "volume not found", http.StatusNotFound)
	default:
		http.Error(w, "unexpected", http.StatusTeapot)
	}
}

// Put registers volume vol (its JSON, as Nomad answers a read of it) as `nomad volume
// register` would, at the next index.
func (f *Cluster) Put(id string, vol map[string]any) {
	b, _ := json.Marshal(vol)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	f.vols[id] = b
}

// Has says whether the cluster has volume id.
func (f *Cluster) Has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vols[id] != nil
}

// Registrations is how many registrations the cluster took.
func (f *Cluster) Registrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

// Balancer is a load balancer before several Nomad clusters at one address, which sends each
// request to the next one (round-robin), as an HTTP balancer per request does.
type Balancer struct {
	URL string

	mu       sync.Mutex
	backends []http.Handler
	next     atomic.Int64
}

// RoundRobin is a balancer before backends, each request to the next one, the first to the
// first; closed when the test ends.
func RoundRobin(t testing.TB, backends ...http.Handler) *Balancer {
	b := &Balancer{backends: backends}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		bs := b.backends
		b.mu.Unlock()
		bs[int(b.next.Add(1)-1)%len(bs)].ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b.URL = srv.URL
	return b
}

// Set puts backends behind the balancer in place of those before, the next request to the
// one at start: a test that runs a command once for each backend its first request reaches
// holds the command to every order the balancer may give.
func (b *Balancer) Set(start int, backends ...http.Handler) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(backends) > 0 {
		b.backends = backends
	}
	b.next.Store(int64(start))
}

// Pinned is a load balancer before several clusters that keeps a client on one of them (per
// connection or source address, as a sticky session does): every request goes to the one it
// is pinned to, the first at start, until Pin moves it to another (the session expired, the
// balancer restarted). No answer of one command then comes from two clusters.
type Pinned struct {
	URL string

	backends []http.Handler
	at       atomic.Int64
}

// Pin is a balancer pinned to the first of backends; closed when the test ends.
func Pin(t testing.TB, backends ...http.Handler) *Pinned {
	p := &Pinned{backends: backends}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.backends[int(p.at.Load())%len(p.backends)].ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Move pins the balancer to backend i from the next request on.
func (p *Pinned) Move(i int) { p.at.Store(int64(i)) }

// Split is a load balancer (or a proxy) that routes by path: /v1/status/ to status, every
// other request to rest, as one that sends Nomad's status endpoints to one cluster and its
// API to another; closed when the test ends.
func Split(t testing.TB, status, rest http.Handler) (url string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/status/") {
			status.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Refusing is a Nomad that answers every request 403, at X-Nomad-Index 7, its page what
// page says of the request (nil: "Permission denied"), as a proxy or Nomad that echoes what
// it was sent; asked lists the URLs it was asked, in order.
func Refusing(t testing.TB, page func(r *http.Request) string) (url string, asked func() []string) {
	var mu sync.Mutex
	var urls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		urls = append(urls, r.URL.String())
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", "7")
		text := "Permission denied"
		if page != nil {
			text = page(r)
		}
		http.Error(w, text, http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), urls...)
	}
}
