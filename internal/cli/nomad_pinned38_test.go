package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/nomad/nomadtest"
)

// pinnedHandover is volume db handed over to cluster a (servers s1-s3) through a balancer
// that keeps this client on one cluster (a sticky session), a second cluster b (servers
// t1-t3, another leader, its Raft index far past a's) behind it too: every request of the
// handover reached a.
func pinnedHandover(t *testing.T) (h *cliHarness, a, b *fakeNomad, lb *nomadtest.Pinned) {
	t.Helper()
	h = nomadHarness(t)
	a, b = newFakeNomad(t), newFakeNomad(t)
	a.leader.Store("10.0.1.1:4647")
	a.peers.Store([]string{"10.0.1.1:4647", "10.0.1.2:4647", "10.0.1.3:4647"})
	b.leader.Store("10.0.2.1:4647")
	b.peers.Store([]string{"10.0.2.1:4647", "10.0.2.2:4647", "10.0.2.3:4647"})
	b.index.Store(900000)
	lb = nomadtest.Pin(t, a.srv.Config.Handler, b.srv.Config.Handler)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb), Volumes: []string{"db"}}); err != nil {
		t.Fatal(err)
	}
	if !a.has("default", "db") || b.has("default", "db") || !handedOver(t, h) {
		t.Fatal("the handover through a balancer pinned to the first cluster did not register the volume there alone")
	}
	return h, a, b, lb
}

func pinnedAt(lb *nomadtest.Pinned) func() (*nomad.Client, error) {
	return func() (*nomad.Client, error) { return nomad.NewClient(lb.URL) }
}

// A balancer that keeps a client on one cluster for a while, then moves it to another (its
// session expired): every request of the take-back reaches the second cluster, which never
// had the volume; both leader questions name its leader, and its 404 comes at its own index,
// far past the registration's. The volume was taken back while the first cluster has it, its
// allocs free to use it beside volctl's claims. The mark keeps the servers the cluster named
// at the handover: a cluster naming none of them is another one, and its 404 is not taken
// (exit 4), the error naming both sets and what settles it.
func TestNomadReleaseThroughAPinnedBalancerMovedToAnotherClusterKeepsTheMark(t *testing.T) {
	h, _, _, lb := pinnedHandover(t)
	lb.Move(1)
	_, err := runNomadRelease(h, pinnedAt(lb), nil)
	if !handedOver(t, h) {
		t.Fatalf("the volume was taken back on the word of a cluster it was never handed to: %v", err)
	}
	if ExitCode(err) != ExitConflict {
		t.Errorf("release exits %d, want %d: %v", ExitCode(err), ExitConflict, err)
	}
	for _, want := range []string{`volume "db"`, "10.0.2.1:4647", "10.0.1.1:4647", "another Nomad cluster answers there", "stays marked handed over",
		"`env -u NOMAD_REGION nomad volume status -namespace default db` against the servers of the cluster it was handed to", "`volctl nomad release --force db` takes it back"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("release: %v\nwant it to say %q", err, want)
		}
	}
}

// The same balancer moved, a registration again (an update, say after a `volume update`)
// went to the second cluster, which took it: the volume was then in two clusters, each free
// to place allocs on it. Nothing is sent now (exit 4), the mark kept as it was.
func TestNomadRegisterAgainThroughAPinnedBalancerMovedSendsNothing(t *testing.T) {
	h, a, b, lb := pinnedHandover(t)
	lb.Move(1)
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb), Volumes: []string{"db"}})
	if b.has("default", "db") {
		t.Fatalf("a registration again reached another cluster, which now has the volume beside the first: %v", err)
	}
	if ExitCode(err) != ExitConflict || !handedOver(t, h) || !a.has("default", "db") {
		t.Errorf("register again through the moved balancer: exit %d (want %d), marked %v: %v", ExitCode(err), ExitConflict, handedOver(t, h), err)
	}
	for _, want := range []string{"nothing was sent", "10.0.2.1:4647", "`volctl nomad release --force db` takes it back"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("register again: %v\nwant it to say %q", err, want)
		}
	}
}

// The honest cases: the balancer still on the first cluster, the volume deregistered there,
// takes it back, also when that cluster's servers changed meanwhile one at a time (one in
// common); a registration again through it goes through and records the servers it names
// now; and a mark made where the servers were not answered (a proxy that passes only the
// volume API, or a volctl before this one) is taken back on a 404 as before.
func TestNomadReleaseThroughAPinnedBalancerOfTheSameClusterTakesItBack(t *testing.T) {
	h, a, _, lb := pinnedHandover(t)
	a.peers.Store([]string{"10.0.1.3:4647", "10.0.1.4:4647", "10.0.1.5:4647"})
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb), Volumes: []string{"db"}}); err != nil {
		t.Fatalf("register again on the same cluster, one server replaced: %v", err)
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || strings.Join(hs[0].Peers, ",") != "10.0.1.3:4647,10.0.1.4:4647,10.0.1.5:4647" {
		t.Errorf("the mark after a registration again: %+v, want the servers named now", hs)
	}
	a.peers.Store([]string{"10.0.1.5:4647", "10.0.1.6:4647", "10.0.1.7:4647"})
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	if _, err := runNomadRelease(h, pinnedAt(lb), nil); err != nil || handedOver(t, h) {
		t.Fatalf("release from the same cluster, its servers replaced one at a time: %v (still marked: %v)", err, handedOver(t, h))
	}

	h = nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	a.peers.Store([]string{"404"})
	b.peers.Store([]string{"10.0.2.1:4647"})
	lb = nomadtest.Pin(t, a.srv.Config.Handler, b.srv.Config.Handler)
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb), Volumes: []string{"db"}}); err != nil {
		t.Fatal(err)
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || len(hs[0].Peers) != 0 {
		t.Fatalf("a mark whose cluster named no servers: %+v", hs)
	}
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	if _, err := runNomadRelease(h, pinnedAt(lb), nil); err != nil || handedOver(t, h) {
		t.Fatalf("release of a mark without servers: %v (still marked: %v)", err, handedOver(t, h))
	}
}

// runStatusThrough is `volctl nomad status db --json` against the Nomad c gives.
func runStatusThrough(h *cliHarness, c func() (*nomad.Client, error)) (st []map[string]any, err error) {
	ios, _, out, _ := iostreams.Test()
	err = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: c, Volumes: []string{"db"}, Exporter: exportFlags{JSON: true}})
	json.Unmarshal(out.Bytes(), &st)
	return st, err
}

// runPlanThrough is `volctl nomad register db --dry-run` against the Nomad c gives.
func runPlanThrough(h *cliHarness, c func() (*nomad.Client, error)) (string, error) {
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: c, Volumes: []string{"db"}, DryRun: true})
	return out.String(), err
}

// nomad status and register --dry-run through a balancer that sends each request to the next
// of two clusters: each read Nomad's copy through it once and said what that one cluster had
// ("Would register", IN NOMAD no; with one cluster's copy, "Would update"), exit 0, whichever
// the balancer reached; the registration itself
// sends nothing there (its leader, asked twice in a row, is named two ways). Both ask the
// leader so now, and say that more than one cluster answers, naming what shows the volume in
// each, exit 1 as the registration; the plan of a registration says it would send nothing.
func TestNomadStatusAndPlanThroughABalancerOfTwoClustersSayItCannotTell(t *testing.T) {
	for start := range 2 {
		h := nomadHarness(t)
		a, b := newFakeNomad(t), newFakeNomad(t)
		b.leader.Store("10.0.2.1:4647")
		b.index.Store(900000)
		lb := nomadtest.RoundRobin(t, a.srv.Config.Handler, b.srv.Config.Handler)
		lb.Set(start)
		out, err := runPlanThrough(h, balanced(lb))
		if ExitCode(err) != ExitError || strings.Contains(out, "Would register") || strings.Contains(out, "Would update") {
			t.Errorf("start %d: register --dry-run through two clusters: exit %d, %q, %v; want exit 1 and no plan of either", start, ExitCode(err), out, err)
		}
		for _, want := range []string{`volume "db"`, "more than one Nomad cluster answers", "the registration would send nothing", "`nomad volume status -namespace default db` against each cluster's own servers"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("start %d: register --dry-run: %v\nwant it to say %q", start, err, want)
			}
		}
		lb.Set(start)
		st, err := runStatusThrough(h, balanced(lb))
		if ExitCode(err) != ExitError || len(st) != 1 || st[0]["nomad"] != nil || !strings.Contains(fmt.Sprint(st[0]["error"]), "more than one Nomad cluster answers") {
			t.Errorf("start %d: nomad status through two clusters: exit %d, %v, %v; want exit 1, the row's error saying more than one cluster answers", start, ExitCode(err), st, err)
		}
	}
}

// nomad status and register --dry-run of a volume handed to cluster a through a balancer that
// keeps a client on one cluster, since moved to cluster b: status said Nomad has no volume db
// there, "deregistered there since", and that `volctl nomad release` takes it back; the plan
// said "Would register" (in b, beside a's), exit 0. Now status says another cluster answers
// than the one it was handed to (exit 1, the row's error), and the plan says the registration
// would be refused (exit 4, as it is). The honest case: the balancer on a, the volume there,
// both say so as before.
func TestNomadStatusAndPlanThroughAPinnedBalancerMovedNameTheOtherCluster(t *testing.T) {
	h, _, _, lb := pinnedHandover(t)
	if st, err := runStatusThrough(h, pinnedAt(lb)); err != nil || len(st) != 1 || st[0]["registered"] != true {
		t.Fatalf("nomad status through the balancer on the cluster that has it: %v, %v", st, err)
	}
	if out, err := runPlanThrough(h, pinnedAt(lb)); err != nil || !strings.Contains(out, "nothing would change") {
		t.Fatalf("register --dry-run through the balancer on the cluster that has it: %q, %v", out, err)
	}
	lb.Move(1)
	st, err := runStatusThrough(h, pinnedAt(lb))
	if ExitCode(err) != ExitError || len(st) != 1 || !strings.Contains(fmt.Sprint(st[0]["error"]), "another Nomad cluster answers there") ||
		!strings.Contains(fmt.Sprint(st[0]["error"]), "10.0.1.1:4647") {
		t.Errorf("nomad status through the moved balancer: exit %d, %v, %v; want exit 1, the row's error naming another cluster", ExitCode(err), st, err)
	}
	out, err := runPlanThrough(h, pinnedAt(lb))
	if ExitCode(err) != ExitConflict || strings.Contains(out, "Would register volume") || !strings.Contains(out, "another Nomad cluster answers there") {
		t.Errorf("register --dry-run through the moved balancer: exit %d, %q, %v; want exit 4, saying another cluster answers", ExitCode(err), out, err)
	}
}
