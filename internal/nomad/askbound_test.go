package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// A registration that ended without Nomad saying how (a gateway's 504), then the question
// whether Nomad has the volume gets no answer either, within its own bound (askAfterFailure,
// shorter than a request's): the error says the question got no answer within that bound,
// not that it was "interrupted" (nothing interrupted it, and no Ctrl-C came).
func TestNomadQuestionAfterAFailedRegistrationSaysItsBound(t *testing.T) {
	defer func(d time.Duration) { askAfterFailure = d }(askAfterFailure)
	askAfterFailure = 200 * time.Millisecond
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/status/leader": // not the question: no leader said
			http.Error(w, "404 page not found", http.StatusNotFound)
		case r.Method == http.MethodPut:
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
		case reads.Add(1) == 1: // before the registration: Nomad has none
			w.Header().Set("X-Nomad-Index", "1")
			http.Error(w, "volume not found", http.StatusNotFound)
		default: // the question after it hangs
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 5 * time.Second
	done, err := c.HandOver(context.Background(), spec.Volume{ID: "db", PluginID: "hp"}, true, nil)
	if err == nil || done.Undo || !done.InFlight {
		t.Fatalf("registration answered 504, question unanswered: %+v, %v; want the mark kept, in flight", done, err)
	}
	if !strings.Contains(err.Error(), "asking it failed too") || !strings.Contains(err.Error(), "no answer within 200ms") || strings.Contains(err.Error(), "interrupted") {
		t.Errorf("error: %v\nwant it to say the question got no answer within 200ms, not that it was interrupted", err)
	}
}

// Nomad (or a proxy before it) starts an answer and closes the connection before it is whole
// (Nomad restarting, a proxy's idle cut): the error says the answer was cut short, not "is
// Nomad running there?" about something that answered.
func TestNomadAnswerCutShortIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Nomad-Index: 7\r\nContent-Length: 400\r\n\r\n{\"ID\":\"db\",\"Namespace\":\"default\",")
		buf.Flush()
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, verr := c.VolumeIn(context.Background(), "db", "default", "")
	_, perr := c.Plugin(context.Background(), "hp")
	for _, err := range []error{verr, perr} {
		if err == nil || !strings.Contains(err.Error(), "cut short") || strings.Contains(err.Error(), "is Nomad running there") {
			t.Errorf("answer cut short: %v\nwant it to say so, not ask whether Nomad runs", err)
		}
	}
}

// Nomad (or a proxy before it) takes the question about its cluster's leader and never
// answers it: that question has its own bound (askAfterFailure, shorter than a request's),
// and the error says that bound, the time the user waited, not the request's minute
// (`volctl nomad status` said "no answer within 1m0s" after 10 s). Each caller of the leader
// question is asked: the handover's, the status read's, the cluster's.
func TestNomadLeaderQuestionUnansweredSaysItsBound(t *testing.T) {
	defer func(d time.Duration) { askAfterFailure = d }(askAfterFailure)
	askAfterFailure = 200 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // every request hangs: the leader question is the first
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 5 * time.Second
	_, herr := c.HandOver(context.Background(), spec.Volume{ID: "db", PluginID: "hp"}, true, nil)
	_, verr := c.VolumeOfOneCluster(context.Background(), "db", "default", "", nil)
	_, cerr := c.OneCluster(context.Background(), "")
	for name, err := range map[string]error{"HandOver": herr, "VolumeOfOneCluster": verr, "OneCluster": cerr} {
		if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") || strings.Contains(err.Error(), "within 5s") {
			t.Errorf("%s, the leader question unanswered: %v\nwant it to say no answer within 200ms, the question's bound, not the request's 5s", name, err)
		}
	}
}

// TestNomadServersQuestionHasTheQuestionsBound: which versions Nomad's servers run is asked
// beside a registration's and a status's own requests, to warn of a Nomad that erases secrets;
// a /v1/agent/members that never answered held the command for a request's whole minute,
// where the leader and peers questions have their own bound (askAfterFailure). Found by helper
// review67 (weak lead, taken up).
func TestNomadServersQuestionHasTheQuestionsBound(t *testing.T) {
	defer func(d time.Duration) { askAfterFailure = d }(askAfterFailure)
	askAfterFailure = 200 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 30 * time.Second
	_, err = c.Servers(context.Background())
	if err == nil || !strings.Contains(err.Error(), "200ms") || !strings.Contains(err.Error(), "its servers") {
		t.Errorf("the servers question, unanswered: %v\nwant it to say it got no answer within its own bound, 200ms", err)
	}
}
