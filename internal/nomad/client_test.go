package nomad

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// A Nomad (or whatever answers at NOMAD_ADDR) sending an endless answer: volctl reads at most
// maxAnswer bytes of it, decompressed, and an error body it shows is cut short.
func TestNomadAnswerIsBounded(t *testing.T) {
	defer func(n int64) { maxAnswer = n }(maxAnswer)
	maxAnswer = 1 << 20
	big := strings.Repeat("a", 4<<20)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"ID":"` + big + `"}`))
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/plugin/csi/gzip": // 4 MiB of JSON in 4 KiB of gzip
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz.Bytes())
		case "/v1/plugin/csi/plain":
			w.Write([]byte(`{"ID":"` + big + `"}`))
		default: // an error with a 4 MiB body
			http.Error(w, "error: "+big, http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gzip", "plain"} {
		p, err := c.Plugin(context.Background(), id)
		if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
			t.Errorf("plugin %s: read an answer of %d bytes, err %.200v; want it refused past 1 MiB", id, len(p.ID), err)
		}
	}
	_, err = c.Plugin(context.Background(), "error")
	if err == nil || len(err.Error()) > 8<<10 || !strings.Contains(err.Error(), "500: error: aaa") {
		t.Errorf("error with a 4 MiB body: %d bytes of error, want at most 8 KiB beginning with what Nomad said: %.200v", len(err.Error()), err)
	}
}

// A refusal that echoes the registration past the length volctl shows: the secret is replaced
// before the body is cut, so no part of it is left at the cut.
func TestNomadRefusalCutAfterScrubbing(t *testing.T) {
	const secret = "hunter2-very-secret-value"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.Repeat("x", maxShown-7)+" "+secret+" and more", http.StatusInternalServerError)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.register(context.Background(), spec.Volume{ID: "db", PluginID: "p", Secrets: spec.Secrets{"k": secret}})
	if err == nil || strings.Contains(err.Error(), secret[:6]) || !strings.Contains(err.Error(), "bytes more") {
		t.Fatalf("refusal echoing the secret at the cut: %.120v…%s", err, err.Error()[max(0, len(err.Error())-80):])
	}
}

// Whatever answers at NOMAD_ADDR may echo the request's headers in an error (a proxy's error
// page, a debugging endpoint): the ACL token and the HTTP basic auth password volctl sent are
// not shown.
func TestNomadErrorEchoingTheTokenIsRedacted(t *testing.T) {
	const token, password = "3f9c1a7e-acl-secret-id", "basic-auth-pw"
	t.Setenv("NOMAD_TOKEN", token)
	t.Setenv("NOMAD_HTTP_AUTH", "user:"+password)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("Permission denied: X-Nomad-Token: %s, Authorization: %s (%s)",
			r.Header.Get("X-Nomad-Token"), r.Header.Get("Authorization"), password), http.StatusForbidden)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, perr := c.Plugin(context.Background(), "p")
	_, verr := c.Volume(context.Background(), "v", "")
	_, _, rerr := c.register(context.Background(), spec.Volume{ID: "v", PluginID: "p"})
	for _, err := range []error{perr, verr, rerr} {
		if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), password) ||
			strings.Contains(err.Error(), "dXNlcjpi") || !strings.Contains(err.Error(), "403: Permission denied") {
			t.Errorf("error echoing the credentials: %v", err)
		}
	}
}

// A password in NOMAD_ADDR is not in the address volctl shows (and records in a handover
// mark), nor in what Nomad says.
func TestNomadAddressPasswordIsNotShown(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied: "+r.Header.Get("Authorization"), http.StatusForbidden)
	}))
	defer srv.Close()
	c, err := NewClient(strings.Replace(srv.URL, "http://", "http://admin:addr-pw-42@", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "p")
	if strings.Contains(c.Address, "addr-pw-42") || err == nil || strings.Contains(err.Error(), "addr-pw-42") ||
		strings.Contains(err.Error(), "YWRtaW46") || !strings.Contains(err.Error(), "403: denied") {
		t.Errorf("address %q, error %v", c.Address, err)
	}
}

// Nomad's warnings on a registration it took may quote the request (a policy naming what it
// checked): the volume's secrets, mount flags and the ACL token are not in what HandOver
// returns to be shown.
func TestNomadWarningsAreScrubbed(t *testing.T) {
	const token, secret, flag = "acl-5e1f-token", "s3cr3t-value-9", "password=flag-77"
	t.Setenv("NOMAD_TOKEN", token)
	v := spec.Volume{ID: "db", PluginID: "p", ExternalID: "x", Namespace: "default", Secrets: spec.Secrets{"k": secret},
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{flag}}}
	registered := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1")
		switch {
		case r.URL.Path == "/v1/volumes": // Nomad has no other volume
			fmt.Fprint(w, `[]`)
		case r.Method == http.MethodPut:
			registered = true
			fmt.Fprintf(w, `{"Warnings":"policy saw token %s, secret %s, flag %s"}`, r.Header.Get("X-Nomad-Token"), secret, flag)
		case registered:
			fmt.Fprint(w, `{"ID":"db","Namespace":"default","PluginID":"p","ExternalID":"x"}`)
		default:
			http.Error(w, "volume not found", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.HandOver(context.Background(), v, true, nil)
	if err != nil || !strings.Contains(done.Warnings, "policy saw token") {
		t.Fatalf("HandOver: %+v, %v", done, err)
	}
	for _, s := range []string{token, secret, flag} {
		if strings.Contains(done.Warnings, s) {
			t.Errorf("warnings show %q: %s", s, done.Warnings)
		}
	}
}

// A Nomad (or a proxy) that sends the headers and then drips the body a byte at a time, never
// ending it: the request's timeout bounds the whole answer, not just its headers.
func TestNomadDrippingAnswerIsBounded(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1")
		w.Write([]byte(`{"ID":"`))
		for {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				w.Write([]byte("a"))
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer srv.Close()
	defer close(stop)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 300 * time.Millisecond
	done := make(chan error, 1)
	go func() { _, err := c.VolumeIn(context.Background(), "db", "default", ""); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Errorf("dripping answer: %v, want it to say no answer within 300ms", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a dripping answer did not end (10s)")
	}
}
