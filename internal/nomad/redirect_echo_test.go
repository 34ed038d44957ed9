package nomad

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// What answers at NOMAD_ADDR redirects, echoing the request's credentials in the Location
// (as a user, in the query, JSON-escaped in its body): none is shown.
func TestNomadRedirectAndEchoesShowNoCredential(t *testing.T) {
	const key = "k3y-0f-the-gateway-7781"
	const tok = "6a1f0e2b-8c3d-4e5f-9a0b-1c2d3e4f5a6b"
	const ppw = "pr0xy p@ss:w\"ord"
	for i, loc := range []string{
		"http://" + key + "@evil.example/v1/x",
		"http://evil.example/login?t=" + url.QueryEscape(tok) + "&k=" + url.QueryEscape(key),
		"",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if loc != "" {
				w.Header().Set("Location", loc)
				w.WriteHeader(http.StatusFound)
				return
			}
			b, _ := json.Marshal(map[string]string{"auth": r.Header.Get("Authorization"), "tok": r.Header.Get("X-Nomad-Token"), "u": r.URL.User.String()})
			http.Error(w, string(b)+" "+url.QueryEscape(key)+" "+url.PathEscape(tok), http.StatusBadRequest)
		}))
		t.Setenv("NOMAD_TOKEN", tok)
		t.Setenv("NOMAD_HTTP_AUTH", "")
		cl, err := NewClient(strings.Replace(srv.URL, "http://", "http://"+key+"@", 1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Plugin(context.Background(), "p")
		srv.Close()
		t.Logf("%d: %v", i, err)
		if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), tok) {
			t.Errorf("%d: shows a credential: %v", i, err)
		}
	}
	_ = ppw
}
