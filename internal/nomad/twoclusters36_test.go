package nomad

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/nomad/nomadtest"
	"github.com/volctl/volctl/internal/spec"
)

// Two Nomad clusters behind one round-robin balancer, the region named by no answer: the
// registration reached one, which took it, and its read-back the other, which answered 404 at
// its own index, far past the registration's. Before round 36, volctl read that as the volume
// deregistered since and took its mark back, while the cluster that took it may place allocs
// on it (two orchestrators on one volume). The leader, asked twice in a row before anything is
// sent, is named otherwise by the two clusters: nothing is sent, whichever cluster the
// balancer's next request reaches, and the error says that more than one cluster answers
// there. (Round 36 asked it once before the registration and once after the read-back, three
// requests apart, and kept the mark unsettled; a registration is no longer sent at all.)
func TestNomadHandOverAcrossTwoClustersKeepsTheMark(t *testing.T) {
	for start := range 2 {
		a := nomadtest.NewCluster("10.0.1.1:4647", 10, 900000)
		b := nomadtest.NewCluster("10.0.2.1:4647", 20, 800000)
		lb := nomadtest.RoundRobin(t, a, b)
		lb.Set(start)
		done, err := handOverDB(t, lb.URL)
		if n := a.Registrations() + b.Registrations(); n > 0 && (done.Undo || !done.InFlight) {
			t.Fatalf("start %d: the mark is taken back (or settled) while a cluster behind the balancer took the registration: %+v, %v", start, done, err)
		}
		for _, want := range []string{"more than one Nomad cluster answers", "10.0.1.1:4647", "10.0.2.1:4647", "nothing was sent", "`volctl nomad register db` again"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("start %d: handover across two clusters: %+v, %v\nwant the error to say %q", start, done, err, want)
			}
		}
	}
}

// Two clusters behind one balancer that cuts over from one to the other while the handover
// runs (the leader asked of the first, the registration taken by it, the read-back and the
// leader after it answered by the second): the read-back's 404, far past the registration's
// index, is not taken as the volume deregistered since; the mark stays, unsettled, and the
// error says that more than one cluster answers there.
func TestNomadHandOverAcrossABalancerThatCutsOverKeepsTheMark(t *testing.T) {
	a := nomadtest.NewCluster("10.0.1.1:4647", 10, 900000)
	b := nomadtest.NewCluster("10.0.2.1:4647", 20, 800000)
	var lb *nomadtest.Balancer
	cutOver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			lb.Set(0, b) // before it answers: the next request goes to the second
		}
		a.ServeHTTP(w, r)
	})
	lb = nomadtest.RoundRobin(t, cutOver)
	done, err := handOverDB(t, lb.URL)
	if a.Registrations() != 1 {
		t.Fatalf("%d registrations reached the first cluster, want 1", a.Registrations())
	}
	if done.Undo || !done.InFlight || err == nil || !strings.Contains(err.Error(), "more than one Nomad cluster answers") || !strings.Contains(err.Error(), "unsettled") {
		t.Errorf("handover across a cut-over: %+v, %v\nwant the mark kept unsettled, and the error to say two clusters answer", done, err)
	}
}

// Three clusters behind one round-robin balancer: the leader asked before the registration
// and after the read-back, three requests apart, reached one cluster, the registration another
// and the read-back the third, whose 404 at its own index, far past the registration's, was
// taken as the volume deregistered since: the mark went while the second cluster had the
// volume. Asked twice in a row, the leader is named by two clusters: nothing is sent.
func TestNomadHandOverAcrossThreeClustersSendsNothing(t *testing.T) {
	for start := range 3 {
		cs := []*nomadtest.Cluster{nomadtest.NewCluster("10.0.1.1:4647", 10, 900000),
			nomadtest.NewCluster("10.0.2.1:4647", 20, 800000), nomadtest.NewCluster("10.0.3.1:4647", 30, 700000)}
		lb := nomadtest.RoundRobin(t, cs[0], cs[1], cs[2])
		lb.Set(start)
		done, err := handOverDB(t, lb.URL)
		taken := cs[0].Registrations() + cs[1].Registrations() + cs[2].Registrations()
		if taken > 0 && (done.Undo || !done.InFlight) {
			t.Errorf("start %d: the mark is taken back (or settled) while a cluster behind the balancer took the registration: %+v, %v", start, done, err)
		}
		if taken > 0 || err == nil || !strings.Contains(err.Error(), "more than one Nomad cluster answers") {
			t.Errorf("start %d: %d registration(s) sent through a balancer of three clusters: %+v, %v\nwant none, and the error to say more than one cluster answers", start, taken, done, err)
		}
	}
}

// The honest case: one cluster behind the balancer (its leader the same throughout), the
// handover settles as before; and a cluster that answers no leader (an older fake, a proxy
// that passes only /v1/volume) is not compared.
func TestNomadHandOverThroughABalancerOfOneClusterSettles(t *testing.T) {
	for _, leader := range []string{"10.0.1.1:4647", ""} {
		one := nomadtest.NewCluster(leader, 10, 5)
		lb := nomadtest.RoundRobin(t, one, one)
		done, err := handOverDB(t, lb.URL)
		if err != nil || !done.OK || done.Undo || done.InFlight {
			t.Errorf("leader %q: handover through a balancer of one cluster: %+v, %v", leader, done, err)
		}
	}
}

// handOverDB hands volume db over, forced, to the Nomad at addr, with no token set.
func handOverDB(t *testing.T, addr string) (Handed, error) {
	t.Helper()
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	c, err := NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	v := spec.Volume{ID: "db", PluginID: "hp", ExternalID: "x", Namespace: "default",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	return c.HandOver(context.Background(), v, true, nil)
}

// refusingNomad is a Nomad that refuses every request 403 (nomadtest.Refusing): its URL, and
// the URLs it was asked.
type refusingNomad struct {
	URL   string
	asked func() []string
}

func refusing(t *testing.T, page func(*http.Request) string) refusingNomad {
	url, asked := nomadtest.Refusing(t, page)
	return refusingNomad{url, asked}
}

// Three clusters behind one round-robin balancer, one of which holds a matching copy of the
// volume already (registered there by hand from the export, or by a handover that reached it
// before): the read before the registration and the read-back reached that one, the
// registration another, and the leader questions, three requests apart, the third. The
// read-back found the copy as sent, and the handover settled, "an update", exit 0, while the
// volume was now registered in two clusters, each free to place allocs on it. Asked twice in
// a row first, the leader is named by two clusters: nothing is sent, whichever cluster holds
// the copy and wherever the balancer starts.
func TestNomadHandOverBesideAMatchingCopyInAnotherClusterSendsNothing(t *testing.T) {
	for holder := range 3 {
		for start := range 3 {
			cs := []*nomadtest.Cluster{nomadtest.NewCluster("10.0.1.1:4647", 10, 900000),
				nomadtest.NewCluster("10.0.2.1:4647", 20, 800000), nomadtest.NewCluster("10.0.3.1:4647", 30, 700000)}
			cs[holder].Put("db", matchingCopy(t))
			lb := nomadtest.RoundRobin(t, cs[0], cs[1], cs[2])
			lb.Set(start)
			done, err := handOverDB(t, lb.URL)
			taken := cs[0].Registrations() + cs[1].Registrations() + cs[2].Registrations()
			if taken > 0 || err == nil || done.OK || !strings.Contains(err.Error(), "more than one Nomad cluster answers") {
				t.Errorf("copy in cluster %d, start %d: %d registration(s) sent: %+v, %v\nwant none, and the error to say more than one cluster answers", holder, start, taken, done, err)
			}
		}
	}
}

// matchingCopy is volume db of handOverDB as a registration sends it: what Nomad answers a
// read of it with once it has it.
func matchingCopy(t *testing.T) map[string]any {
	t.Helper()
	c, err := NewClient("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c.APIVolume(spec.Volume{ID: "db", PluginID: "hp", ExternalID: "x", Namespace: "default",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}))
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}
