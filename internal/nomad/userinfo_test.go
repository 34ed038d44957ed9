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

// NOMAD_TOKEN (or NOMAD_HTTP_AUTH) with a stray newline, CR or blank — read from a file with
// $(cat FILE), a CRLF file, a paste — is refused before any request, naming the variable and
// never its value, as NOMAD_ADDR is. Before, a control character made every request fail in
// Go's words ("invalid header field value for \"X-Nomad-Token\"") with the advice to check
// that Nomad runs at NOMAD_ADDR; a blank was sent on, and Nomad's "Permission denied" was
// read as a token it does not know.
func TestNomadCredentialWithStrayTextIsNamed(t *testing.T) {
	const token = "0b5e-acl-token-77c1"
	for _, c := range []struct{ name, value string }{
		{"NOMAD_TOKEN", token + "\r"},
		{"NOMAD_TOKEN", token + "\n"},
		{"NOMAD_TOKEN", token + " "},
		{"NOMAD_TOKEN", " " + token},
		{"NOMAD_HTTP_AUTH", "user:" + token + "\r"},
	} {
		t.Setenv("NOMAD_TOKEN", "")
		t.Setenv("NOMAD_HTTP_AUTH", "")
		t.Setenv(c.name, c.value)
		_, err := NewClient("http://127.0.0.1:4646")
		if err == nil {
			t.Errorf("%s=%q: no error", c.name, c.value)
			continue
		}
		if !strings.Contains(err.Error(), c.name+" ") || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "without it") {
			t.Errorf("%s=%q: %v\nwant it to name %s, not its value, and say what to write", c.name, c.value, err, c.name)
		}
	}
}
