package nomad

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A NOMAD_HTTP_AUTH password holding a tab: basic auth carries it base64-encoded, so a proxy
// or Nomad takes it; volctl takes it (before, it was refused as stray text).
func TestNomadTabInHTTPAuthPasswordIsTaken(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, got, _ = r.BasicAuth()
		http.Error(w, "nope", http.StatusForbidden)
	}))
	defer srv.Close()
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "ops:correct\thorse-battery")
	cl, err := NewClient(srv.URL)
	if err != nil {
		t.Fatalf("NewClient refused a password with a tab: %v", err)
	}
	cl.Plugin(context.Background(), "p")
	if got != "correct\thorse-battery" {
		t.Errorf("password sent %q", got)
	}
}

// A user-only NOMAD_ADDR whose user is a short plain name: every occurrence of it in what
// Nomad says (a volume ID, a word) was replaced by [REDACTED]; it is hidden only in the
// address and the header's encoding (userKey).
func TestNomadPlainUserOnlyDoesNotGarbleNomadsWords(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	cl, err := NewClient("http://ops@127.0.0.1:4646")
	if err != nil {
		t.Fatal(err)
	}
	if s := cl.Hide(`volume "ops-db" has allocs of job "devops"`); strings.Contains(s, "REDACTED") {
		t.Errorf("Hide garbles Nomad's words: %s", s)
	}
}

// A user-only key in NOMAD_ADDR when nothing answers there: the error names the address, not
// the key (Go's url.Error strips a password only).
func TestNomadUserOnlyKeyNotInDialError(t *testing.T) {
	const key = "k3y-0f-the-gateway-7781"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	cl, err := NewClient("http://" + key + "@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Plugin(context.Background(), "p")
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("dial error shows the key: %v", err)
	}
	t.Logf("err: %v", err)
}
