package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/nomad/nomadtest"
)

// balancedHandover is volume db handed over to cluster a through a balancer that has a alone
// behind it, then a second cluster b (another leader, its Raft index far past a's) put behind
// it beside a, as a cut-over from one cluster to another or a balancer misconfigured does.
func balancedHandover(t *testing.T) (h *cliHarness, a, b *fakeNomad, lb *nomadtest.Balancer) {
	t.Helper()
	h = nomadHarness(t)
	a, b = newFakeNomad(t), newFakeNomad(t)
	b.leader.Store("10.0.2.1:4647")
	b.index.Store(900000)
	lb = nomadtest.RoundRobin(t, a.srv.Config.Handler)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: balanced(lb), Volumes: []string{"db"}}); err != nil {
		t.Fatal(err)
	}
	if !a.has("default", "db") || !handedOver(t, h) {
		t.Fatal("the handover through a balancer of one cluster did not register the volume there")
	}
	return h, a, b, lb
}

// balanced is the client of the Nomad at the balancer's address.
func balanced(lb *nomadtest.Balancer) func() (*nomad.Client, error) {
	return func() (*nomad.Client, error) { return nomad.NewClient(lb.URL) }
}

// nomad release through a balancer that now has two clusters behind it, the volume registered
// in the first (its `nomad volume deregister` reached the second, which has no such volume):
// the release's read reaching the second was answered 404 at that cluster's index, far past
// the registration's, and the volume was taken back while the first cluster has it, its allocs
// free to use it beside volctl's claims. The release asks the leader around its read, as the
// handover does: the mark stays (exit 4), whichever cluster the balancer's next request
// reaches, and the error says that more than one cluster answers there and what takes it back.
func TestNomadReleaseThroughABalancerOfTwoClustersKeepsTheMark(t *testing.T) {
	for start := range 2 {
		h, a, b, lb := balancedHandover(t)
		lb.Set(start, a.srv.Config.Handler, b.srv.Config.Handler)
		_, err := runNomadRelease(h, balanced(lb), nil)
		if !handedOver(t, h) {
			t.Fatalf("start %d: the volume was taken back while the cluster it was handed to has it: %v", start, err)
		}
		if ExitCode(err) != ExitConflict {
			t.Errorf("start %d: release exits %d, want %d: %v", start, ExitCode(err), ExitConflict, err)
		}
		for _, want := range []string{`volume "db"`, "more than one Nomad cluster answers", "10.0.2.1:4647", "stays marked handed over",
			"`env -u NOMAD_REGION nomad volume status -namespace default db` against each cluster's own servers", "`volctl nomad release --force db`"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("start %d: release: %v\nwant it to say %q", start, err, want)
			}
		}
	}
}

// The honest cases: the balancer with the one cluster behind it again, the volume deregistered
// there, is taken back; and one whose leader question is not answered (a proxy that passes
// only the volume API) is not compared.
func TestNomadReleaseThroughABalancerOfOneClusterTakesItBack(t *testing.T) {
	h, a, _, lb := balancedHandover(t)
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	lb.Set(0, a.srv.Config.Handler, a.srv.Config.Handler)
	if _, err := runNomadRelease(h, balanced(lb), nil); err != nil || handedOver(t, h) {
		t.Fatalf("release through a balancer of one cluster, the volume deregistered: %v (still marked: %v)", err, handedOver(t, h))
	}

	h, a, _, lb = balancedHandover(t)
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	lb.Set(0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/status/leader" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		a.srv.Config.Handler.ServeHTTP(w, r)
	}))
	if _, err := runNomadRelease(h, balanced(lb), nil); err != nil || handedOver(t, h) {
		t.Fatalf("release through a proxy that answers no leader, the volume deregistered: %v (still marked: %v)", err, handedOver(t, h))
	}
}

// A handover through a balancer that cut over to another cluster between the registration and
// its read-back keeps the mark, unsettled, for that address. Its advice was to set NOMAD_ADDR
// to one cluster's own servers and register again, which the mark refuses (handed over to the
// balancer's address, not that one), and to release, which refuses the crossed answers: no
// command it named settled it. It names what does now: see each cluster, release --force once
// none has it, then register with NOMAD_ADDR set to one cluster's servers; that works, as
// followed here.
func TestNomadHandoverAcrossClustersAdvisesWhatSettlesIt(t *testing.T) {
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	b.leader.Store("10.0.2.1:4647")
	b.index.Store(900000)
	var lb *nomadtest.Balancer
	aH := a.srv.Config.Handler
	lb = nomadtest.RoundRobin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			lb.Set(0, b.srv.Config.Handler) // cut over before it answers
		}
		aH.ServeHTTP(w, r)
	}))
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: balanced(lb), Volumes: []string{"db"}})
	if !handedOver(t, h) || !a.has("default", "db") {
		t.Fatalf("the handover across a cut-over: %v (marked %v, in the first cluster %v), want the mark kept", err, handedOver(t, h), a.has("default", "db"))
	}
	for _, want := range []string{"more than one Nomad cluster answers", "against each cluster's own servers", "`volctl nomad release --force db` takes it back", "then `volctl nomad register db`, with NOMAD_ADDR set to one cluster's own servers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the handover across a cut-over: %v\nwant it to say %q", err, want)
		}
	}
	// What it advised before, a registration with NOMAD_ADDR set to the first cluster's
	// servers, is refused for the mark.
	if _, _, err := registerIn(h, a); err == nil || !strings.Contains(err.Error(), "already handed over") {
		t.Errorf("register elsewhere while marked for the balancer: %v, want it refused for the mark", err)
	}
	// Followed: the first cluster let go of it, the take-back forced, then handed to it.
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	if _, err := runNomadRelease(h, balanced(lb), func(o *NomadReleaseOptions) { o.Force = true }); err != nil || handedOver(t, h) {
		t.Fatalf("release --force as advised: %v", err)
	}
	if _, _, err := registerIn(h, a); err != nil || !a.has("default", "db") {
		t.Fatalf("register with NOMAD_ADDR set to the first cluster, as advised: %v", err)
	}
}
