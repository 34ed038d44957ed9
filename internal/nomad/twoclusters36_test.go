package nomad

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// fakeCluster is one Nomad cluster as the handover asks it: its leader, its volumes as
// registered, and its Raft index (each answer's X-Nomad-Index). A volume it does not have is
// answered 404 at its volumes' index, which a busy cluster has far ahead (idle404).
type fakeCluster struct {
	leader  string
	idle404 uint64
	mu      sync.Mutex
	index   uint64
	vols    map[string]json.RawMessage
	puts    int
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.index, 10))
	id, vol := strings.CutPrefix(r.URL.Path, "/v1/volume/csi/")
	switch {
	case r.URL.Path == "/v1/status/leader":
		json.NewEncoder(w).Encode(f.leader)
	case r.URL.Path == "/v1/volumes":
		io.WriteString(w, "[]")
	case vol && r.Method == http.MethodPut:
		var req struct{ Volumes []json.RawMessage }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		f.index++
		f.puts++
		f.vols[id] = req.Volumes[0]
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.index, 10))
		io.WriteString(w, `{}`)
	case vol && f.vols[id] != nil:
		w.Write(f.vols[id])
	case vol:
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.idle404, 10))
		http.Error(w, "volume not found", http.StatusNotFound)
	default:
		http.Error(w, "unexpected", http.StatusTeapot)
	}
}

// roundRobin is a load balancer before the clusters, each request to the next one.
func roundRobin(t *testing.T, backends ...http.Handler) *httptest.Server {
	var next atomic.Int64
	var proxies []http.Handler
	for _, b := range backends {
		s := httptest.NewServer(b)
		t.Cleanup(s.Close)
		u, _ := url.Parse(s.URL)
		proxies = append(proxies, httputil.NewSingleHostReverseProxy(u))
	}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[int(next.Add(1)-1)%len(proxies)].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	return lb
}

// Two Nomad clusters behind one round-robin balancer, the region named by no answer: the
// registration reaches one, which takes it, and its read-back the other, which answers 404 at
// its own index, far past the registration's. Before, volctl read that as the volume
// deregistered since and took its mark back, while the cluster that took it may place allocs
// on it (two orchestrators on one volume). The leader GET /v1/status/leader names changes
// between the registration and the read-back: the mark stays, unsettled, and the error says
// that more than one cluster answers there.
func TestNomadHandOverAcrossTwoClustersKeepsTheMark(t *testing.T) {
	a := &fakeCluster{leader: "10.0.1.1:4647", index: 10, idle404: 900000, vols: map[string]json.RawMessage{}}
	b := &fakeCluster{leader: "10.0.2.1:4647", index: 20, idle404: 800000, vols: map[string]json.RawMessage{}}
	lb := roundRobin(t, a, b)
	done, err := handOverDB(t, lb.URL)
	if a.puts+b.puts != 1 {
		t.Fatalf("%d registrations sent, want 1", a.puts+b.puts)
	}
	if done.Undo {
		t.Fatalf("the mark is taken back while a cluster behind the balancer took the registration: %+v, %v", done, err)
	}
	if !done.InFlight || err == nil || !strings.Contains(err.Error(), "more than one Nomad cluster answers") || !strings.Contains(err.Error(), "unsettled") {
		t.Errorf("handover across two clusters: %+v, %v\nwant the mark kept unsettled, and the error to say two clusters answer", done, err)
	}
}

// The honest case: one cluster behind the balancer (its leader the same throughout), the
// handover settles as before; and a cluster that answers no leader (an older fake, a proxy
// that passes only /v1/volume) is not compared.
func TestNomadHandOverThroughABalancerOfOneClusterSettles(t *testing.T) {
	for _, leader := range []string{"10.0.1.1:4647", ""} {
		one := &fakeCluster{leader: leader, index: 10, idle404: 5, vols: map[string]json.RawMessage{}}
		var h http.Handler = one
		if leader == "" {
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/status/leader" {
					http.Error(w, "404 page not found", http.StatusNotFound)
					return
				}
				one.ServeHTTP(w, r)
			})
		}
		lb := roundRobin(t, h, h)
		done, err := handOverDB(t, lb.URL)
		if err != nil || !done.OK || done.Undo || done.InFlight {
			t.Errorf("leader %q: handover through a balancer of one cluster: %+v, %v", leader, done, err)
		}
	}
}

// handOverDB hands volume db over, forced, to the Nomad at addr, with no token set.
func handOverDB(t *testing.T, addr string) (Handed, error) {
	t.Helper()
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	c, err := NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	v := spec.Volume{ID: "db", PluginID: "hp", ExternalID: "x", Namespace: "default",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	return c.HandOver(context.Background(), v, true)
}
