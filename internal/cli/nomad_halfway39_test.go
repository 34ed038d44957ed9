package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// A Nomad that fails half-way: each request of `volctl nomad register db` and of `volctl
// nomad release db` in turn is answered otherwise than the polite Nomad answers it — applied
// and its answer lost (the connection cut), applied and answered with a 500 or a proxy's 504,
// or refused with a 403 (a token whose policy grants the requests before it and not that
// one). Whatever request fails:
//   - a volume Nomad has is marked handed over here (never claimable by volctl while Nomad
//     may place allocs on it), and a volume Nomad never had is not left marked for a
//     failure Nomad settled (a 403);
//   - one command sends at most one registration;
//   - a 403's error names the ACL rule the request needs;
//   - the same command run again finishes: registered once, the mark settled, and after
//     `nomad volume deregister` the release takes it back; a release never takes back a
//     volume Nomad still has.

// halfway is a fault: how the request it is put on is answered.
type halfway struct {
	name string
	// applied: the request reaches the fake first (a registration is stored), then the
	// answer is status (0: the connection cut).
	applied bool
	status  int
	body    string
}

var halfways = []halfway{
	{"applied, connection cut", true, 0, ""},
	{"applied, 500", true, http.StatusInternalServerError, "internal error"},
	{"applied, a proxy's 504", true, http.StatusGatewayTimeout, "upstream request timeout"},
	{"403", false, http.StatusForbidden, "Permission denied"},
}

// faultFor reports whether fault f is put on request req: a read, which applies nothing, gets
// Nomad's 500 and a 403 only (a proxy's 504 is an error answer read as the 500 is; a read's
// connection cut is one Go's transport asks again on a new connection when it was reused).
func faultFor(req string, f halfway) bool {
	return strings.HasPrefix(req, "PUT") || f.status == http.StatusInternalServerError || f.status == http.StatusForbidden
}

// faultAt wraps n's handler so that its request number at (0-based, counted from now) is
// answered as f says; it returns the requests seen ("GET /v1/..."), for the test's messages.
func faultAt(n *fakeNomad, at int, f halfway) func() []string {
	var mu sync.Mutex
	var seen []string
	next := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := len(seen)
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if i != at {
			next.ServeHTTP(w, r)
			return
		}
		if f.applied {
			next.ServeHTTP(httptest.NewRecorder(), r)
		}
		if f.status == 0 {
			hangUp(w, r)
			return
		}
		http.Error(w, f.body, f.status)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		n.srv.Config.Handler = next
		return seen
	}
}

// requestsOf is the requests run makes of n, polite.
func requestsOf(t *testing.T, h *cliHarness, n *fakeNomad, run func(*cliHarness, *fakeNomad) error) []string {
	t.Helper()
	done := faultAt(n, -1, halfway{})
	if err := run(h, n); err != nil {
		t.Fatalf("the polite run: %v", err)
	}
	return done()
}

func registerOnce(h *cliHarness, n *fakeNomad) error { _, _, err := registerIn(h, n); return err }

func TestNomadRegisterFailingAtEachRequest(t *testing.T) {
	// One volctl and one Nomad throughout: each case ends with the volume taken back, as it
	// began (a harness each cost 0.3 s of CPU).
	// Run again (an update of the copy Nomad has, the volume marked), each request failing so
	// too.
	h, n := nomadHarness(t), newFakeNomad(t)
	first := requestsOf(t, h, n, registerOnce)
	again := requestsOf(t, h, n, registerOnce)
	deregisteredThenReleased(t, h, n, n.client)
	for _, update := range []bool{false, true} {
		reqs := first
		if update {
			reqs = again
		}
		put := slices.IndexFunc(reqs, func(r string) bool { return strings.HasPrefix(r, "PUT") })
		for at := range reqs {
			if update && at < put {
				continue // a read before the update failing sends nothing, as before a first one
			}
			for _, f := range halfways {
				if !faultFor(reqs[at], f) {
					continue
				}
				t.Run(fmt.Sprintf("update %v: %d %s: %s", update, at, reqs[at], f.name), func(t *testing.T) {
					if update {
						if err := registerOnce(h, n); err != nil {
							t.Fatal(err)
						}
					}
					n.puts = nil
					done := faultAt(n, at, f)
					err := registerOnce(h, n)
					seen := done()
					// An exit 0 is the handover done (a read it goes on without, or one Go's transport
					// asked again on a new connection, may fail).
					if err == nil && (!n.has("default", "db") || !handedOver(t, h) || unsettled(t, h)) {
						t.Errorf("register: no error, with %s at %s, and the handover not done (in Nomad: %v, marked: %v, unsettled: %v; requests %q)",
							f.name, reqs[at], n.has("default", "db"), handedOver(t, h), unsettled(t, h), seen)
					}
					if n.has("default", "db") && !handedOver(t, h) {
						t.Fatalf("Nomad has volume db and volctl does not mark it handed over (both places): %v (requests %q)", err, seen)
					}
					if len(n.puts) > 1 {
						t.Errorf("one command sent %d registrations: %q", len(n.puts), seen)
					}
					if f.status == http.StatusForbidden && !n.has("default", "db") && handedOver(t, h) && !unsettled(t, h) {
						t.Errorf("a 403 left volume db marked, settled, with Nomad not having it: %v", err)
					}
					if f.status == http.StatusForbidden && err != nil && !namesRule(err.Error()) {
						t.Errorf("register refused with a 403 at %s: %v\nwant it to name the ACL rule needed", reqs[at], err)
					}
					// The same command again finishes the handover: one registration in Nomad, the
					// mark settled.
					n.puts = nil
					if out, _, err := registerIn(h, n); err != nil || !n.has("default", "db") || !handedOver(t, h) || unsettled(t, h) {
						t.Fatalf("the same command again: %q, %v (in Nomad: %v, marked: %v)", out, err, n.has("default", "db"), handedOver(t, h))
					}
					if len(n.puts) != 1 {
						t.Errorf("the command again sent %d registrations", len(n.puts))
					}
					deregisteredThenReleased(t, h, n, n.client)
				})
			}
		}
	}
}

// The take-back, each of its requests failing in turn: with Nomad still having the volume it
// is never taken back; once deregistered in Nomad, a failed release keeps the mark or takes it
// back, never anything between, and the same command again takes it back.
func TestNomadReleaseFailingAtEachRequest(t *testing.T) {
	h, n := nomadHarness(t), newFakeNomad(t)
	releaseOnce := func(h *cliHarness, n *fakeNomad) error { _, err := runNomadRelease(h, n.client, nil); return err }
	handOver := func(t *testing.T) {
		t.Helper()
		if _, _, err := registerIn(h, n); err != nil || !handedOver(t, h) {
			t.Fatalf("register: %v", err)
		}
	}
	deregister := func() {
		n.mu.Lock()
		delete(n.vols, "default/db")
		n.mu.Unlock()
	}
	handOver(t)
	deregister()
	reqs := requestsOf(t, h, n, releaseOnce)
	for at := range reqs {
		for _, f := range halfways {
			if !faultFor(reqs[at], f) {
				continue
			}
			t.Run(fmt.Sprintf("%d %s: %s", at, reqs[at], f.name), func(t *testing.T) {
				// Nomad still has it: whatever fails, it stays marked.
				handOver(t)
				done := faultAt(n, at, f)
				err := releaseOnce(h, n)
				seen := done()
				if !handedOver(t, h) {
					t.Fatalf("release took back a volume Nomad still has, with %s at request %d (%q): %v", f.name, at, seen, err)
				}
				if f.status == http.StatusForbidden && err != nil && strings.Contains(err.Error(), "Permission denied") && !namesRule(err.Error()) {
					t.Errorf("release refused with a 403: %v\nwant it to name the ACL rule needed", err)
				}
				// Deregistered in Nomad: the failed release keeps the mark or took it back, and
				// the command again leaves it taken back.
				deregister()
				done = faultAt(n, at, f)
				err = releaseOnce(h, n)
				seen = done()
				if err != nil && !handedOver(t, h) {
					t.Errorf("release failed (%v) yet took the volume back, with %s at %q", err, f.name, seen)
				}
				if err := releaseOnce(h, n); err != nil || handedOver(t, h) {
					t.Fatalf("the same release again: %v (still marked: %v)", err, handedOver(t, h))
				}
			})
		}
	}
}

func unsettled(t *testing.T, h *cliHarness) bool {
	t.Helper()
	hs, err := h.e.Handovers(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	return len(hs) == 1 && hs[0].Unsettled
}

// namesRule reports whether an error about a 403 names the ACL rule the request needs.
func namesRule(s string) bool {
	for _, rule := range []string{"csi-write-volume", "csi-read-volume", "csi-list-volume", `"plugin" policy`, "node read", "node:read"} {
		if strings.Contains(s, rule) {
			return true
		}
	}
	return false
}

// `volctl nomad register db v1` with a token whose policy lets it write db and not v1: the
// second registration of the command refused with a 403 after the first went through. Nothing
// half-done: db registered and marked, v1 neither, the error naming v1 and the rule its
// registration needs; the same command with a token that may write both finishes (db
// updated, v1 registered), each registered once.
func TestNomadRegisterSecondVolumeRefusedWithA403(t *testing.T) {
	h, n := nomadHarness(t), newFakeNomad(t)
	ids := manyVolumes(t, h, 1)
	next := n.srv.Config.Handler
	var refuse atomic.Bool
	refuse.Store(true)
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() && r.Method == http.MethodPut && r.URL.Path == "/v1/volume/csi/v1" {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
	run := func() (string, error) {
		ios, _, out, _ := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: ids})
		return out.String(), err
	}
	out, err := run()
	if !n.has("default", "db") || !slices.Equal(marked(t, h, ids), []string{"db"}) || n.has("default", "v1") {
		t.Fatalf("after v1's 403: db in Nomad %v, v1 in Nomad %v, marked %q; want db alone, in both", n.has("default", "db"), n.has("default", "v1"), marked(t, h, ids))
	}
	for _, want := range []string{`volume "v1"`, "403", "csi-write-volume"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("register db v1: %v\nwant it to say %q", err, want)
		}
	}
	if !strings.Contains(out, `Registered volume "db"`) {
		t.Errorf("register db v1: stdout %q, want it to say db was registered", out)
	}
	refuse.Store(false)
	n.puts = nil
	out, err = run()
	if err != nil || !strings.Contains(out, `Updated volume "db"`) || !strings.Contains(out, `Registered volume "v1"`) || len(n.puts) != 2 ||
		!slices.Equal(marked(t, h, ids), ids) {
		t.Fatalf("the same command again: %q, %v (%d registrations; marked %q)", out, err, len(n.puts), marked(t, h, ids))
	}
}
