package nomad

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A credential given as a user with no password — NOMAD_ADDR=https://KEY@host, or
// NOMAD_HTTP_AUTH=KEY with no colon, as an API key is passed to a proxy or gateway that takes
// one as the basic auth user — is the only credential the request carries, sent in its
// Authorization header as "KEY:". Before, only a password was taken for one: the key was in
// the address volctl shows in every message (and records in a handover mark), and a proxy's
// page echoing the request's Authorization header or its user showed it, as it is and in
// base64. It is hidden as a password is.
func TestNomadUserOnlyCredentialIsNotShown(t *testing.T) {
	const key = "k3y-0f-the-gateway-7781"
	encoded := base64.StdEncoding.EncodeToString([]byte(key + ":"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		http.Error(w, "denied: "+r.Header.Get("Authorization")+" user "+user, http.StatusForbidden)
	}))
	defer srv.Close()
	for _, c := range []struct {
		what, addr, auth string
	}{
		{"NOMAD_ADDR's user", strings.Replace(srv.URL, "http://", "http://"+key+"@", 1), ""},
		{"NOMAD_HTTP_AUTH without a colon", srv.URL, key},
	} {
		t.Setenv("NOMAD_TOKEN", "")
		t.Setenv("NOMAD_HTTP_AUTH", c.auth)
		cl, err := NewClient(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Plugin(context.Background(), "p")
		if err == nil || !strings.Contains(err.Error(), "403: denied") {
			t.Fatalf("%s: error %v, want the 403", c.what, err)
		}
		for _, shown := range []string{cl.Address, err.Error()} {
			if strings.Contains(shown, key) || strings.Contains(shown, encoded) {
				t.Errorf("%s: shows the key: %s", c.what, shown)
			}
		}
	}
}
