package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
	// status answers it with that status (and the body) instead.
	onPut func(w http.ResponseWriter, r *http.Request) (status int, body string)
}

func newFakeNomad(t *testing.T) *fakeNomad {
	n := &fakeNomad{t: t, vols: map[string]bool{}}
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *fakeNomad) serve(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = "default"
	}
	w.Header().Set("X-Nomad-Index", "1")
	switch id, ok := strings.CutPrefix(r.URL.Path, "/v1/volume/csi/"); {
	case strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/"):
		fmt.Fprintf(w, `{"ID":%q,"Provider":"hostpath.csi.volctl.dev","NodesHealthy":1,"NodesExpected":1}`,
			strings.TrimPrefix(r.URL.Path, "/v1/plugin/csi/"))
	case ok && r.Method == http.MethodGet:
		n.mu.Lock()
		has := n.vols[ns+"/"+id]
		n.mu.Unlock()
		if !has {
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ID": id, "Namespace": ns, "PluginID": "hp"})
	case ok && r.Method == http.MethodPut:
		io.Copy(io.Discard, r.Body)
		if n.onPut != nil {
			if status, body := n.onPut(w, r); status != 0 {
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
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	if _, err := runNomadRelease(h, a.client, nil); err != nil || handedOver(t, h) {
		t.Fatalf("release from the cluster it was handed to, after deregister: %v (still marked: %v)", err, handedOver(t, h))
	}
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
}
