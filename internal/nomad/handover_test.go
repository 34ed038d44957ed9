package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// An operator deregisters the volume in Nomad between volctl's registration and its read-back:
// Nomad answered the registration OK at index 10, and its 404 comes at index 11, from a state
// after the one it applied the registration in. The mark goes (Nomad has no such volume, as
// `volctl nomad release` would find), and the error says what happened: Nomad took it and it
// was deregistered since, not that Nomad "did not register it", which sends the operator
// looking for a fault in the registration.
func TestNomadVolumeDeregisteredAfterTheRegistrationIsSaidSo(t *testing.T) {
	var put atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/volumes": // Nomad has no other volume
			w.Header().Set("X-Nomad-Index", "5")
			w.Write([]byte(`[]`))
		case r.Method == http.MethodPut:
			put.Store(true)
			w.Header().Set("X-Nomad-Index", "10")
			w.Write([]byte(`{}`))
		case put.Load(): // deregistered at index 11
			w.Header().Set("X-Nomad-Index", "11")
			http.Error(w, "volume not found", http.StatusNotFound)
		default:
			w.Header().Set("X-Nomad-Index", "5")
			http.Error(w, "volume not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	v := spec.Volume{ID: "db", PluginID: "hp", ExternalID: "x", Namespace: "default",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	done, err := c.HandOver(context.Background(), v, true, nil)
	if !done.Undo {
		t.Errorf("the mark stays for a volume Nomad deregistered: %+v", done)
	}
	for _, w := range []string{"at index 10", "at index 11", "deregistered", "volctl nomad register db"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("volume deregistered after the registration: %v\nwant it to say %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "did not register it") {
		t.Errorf("volume deregistered after the registration: %v\nsays Nomad did not register it, which it did", err)
	}
}

// Nomad's connection limit (limits.http_max_conns_per_client answers 429), a proxy's rate
// limit or a server not ready (503), with or without Retry-After: volctl does not retry (a
// retry inside the command would hold the volume lock a registration holds for as long as
// the other side asks), so the error says to run the command again, and when, as Retry-After
// says (seconds or a date). The volume is named once.
func TestNomadBusyAnswerSaysWhenToAskAgain(t *testing.T) {
	for _, tc := range []struct {
		code       int
		retryAfter string
		want       string
	}{
		{http.StatusTooManyRequests, "30", "in 30s"},
		{http.StatusServiceUnavailable, "Sun, 29 Nov 2026 12:00:00 GMT", "at 2026-11-29 12:00:00 UTC"},
		{http.StatusTooManyRequests, "", "later"},
		{http.StatusServiceUnavailable, "soon", "later"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			http.Error(w, http.StatusText(tc.code), tc.code)
		}))
		c, err := NewClient(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, perr := c.Plugin(context.Background(), "hp")
		_, herr := c.HandOver(context.Background(), spec.Volume{ID: "db", PluginID: "hp"}, true, nil)
		srv.Close()
		for _, err := range []error{perr, herr} {
			for _, w := range []string{"does not retry", "run the command again " + tc.want} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%d, Retry-After %q: %v\nwant it to say %q", tc.code, tc.retryAfter, err, w)
				}
			}
		}
		if herr != nil && strings.Count(herr.Error(), `volume "db"`) != 1 {
			t.Errorf("%d: %v\nnames the volume more than once", tc.code, herr)
		}
	}
}
