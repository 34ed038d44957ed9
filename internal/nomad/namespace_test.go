package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
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
