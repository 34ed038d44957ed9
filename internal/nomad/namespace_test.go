package nomad

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// Every request names its namespace itself, as it names its region: a handover mark with no
// namespace (Nomad's default one) is looked up with none, not in NOMAD_NAMESPACE's, which the
// api module would otherwise add to a request that names none, and which answers that it has
// no such volume; a mark's namespace is asked in as it is.
func TestRequestsNameTheirNamespaceNotNOMAD_NAMESPACE(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string][]string{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], r.URL.Query().Get("namespace"))
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", "1")
		http.Error(w, "volume not found", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_NAMESPACE", "other")
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.VolumeIn(context.Background(), "db", "", "")
	_, _ = c.VolumeIn(context.Background(), "db2", "team", "")
	_, _ = c.Plugin(context.Background(), "hp")
	mu.Lock()
	defer mu.Unlock()
	for path, want := range map[string]string{"/v1/volume/csi/db": "", "/v1/volume/csi/db2": "team", "/v1/plugin/csi/hp": ""} {
		if got := seen[path]; len(got) == 0 || got[0] != want {
			t.Errorf("%s asked in namespaces %q; want %q (NOMAD_NAMESPACE=other names none of them)", path, got, want)
		}
	}
}

// An older Nomad's copy of a volume names no namespace. VolumeIn took it as the volume asked;
// Identity then called it another volume for its namespace "" against "default", and `nomad
// register` and `nomad status` said a volume of the same ID, plugin and external ID was
// someone else's. Found by helper review67 pluginflows (a weak lead taken up in round 68).
func TestCopyNamingNoNamespaceIsTheVolumeAsked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1")
		io.WriteString(w, `{"ID":"db","PluginID":"hp","ExternalID":"ext-1"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Volume{ID: "db", PluginID: "hp", ExternalID: "ext-1"}
	for _, ns := range []string{"default", "team"} {
		have, err := c.VolumeIn(context.Background(), "db", ns, "")
		if err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		if d := IdentityIn(have, want, ns); len(d) > 0 {
			t.Errorf("namespace %s: a copy naming no namespace is taken for another volume: %q", ns, d)
		}
	}
	// It still tells another volume by what the copy does name.
	if d := IdentityIn(VolumeState{ID: "db", PluginID: "other", ExternalID: "ext-1"}, want, "default"); len(d) != 1 {
		t.Errorf("a copy of another plugin: differences %q; want the plugin_id's", d)
	}
	if d := IdentityIn(VolumeState{ID: "db", Namespace: "team", PluginID: "hp", ExternalID: "ext-1"}, want, "default"); len(d) != 1 {
		t.Errorf("a copy in another namespace: differences %q; want the namespace's", d)
	}
}
