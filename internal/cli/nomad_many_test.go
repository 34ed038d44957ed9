package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// A command over many volumes (--all, or several named) against a Nomad that stops answering,
// or says it is busy, part way: the command asks it nothing more, and names the volumes it did
// not get to and the command that does them. Before, it went on to each of them: every one
// waited out the request timeout (a minute each, hours for a few hundred volumes), a
// registration Nomad could not apply left each one marked handed over with its outcome
// unsaid, and a rate-limited Nomad was asked again for every volume.

// manyVolumes adds volumes v1..vN (besides db) to the harness, on its hostpath plugin "hp".
func manyVolumes(t *testing.T, h *cliHarness, n int) []string {
	t.Helper()
	ids := []string{"db"}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("v%d", i)
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// marked lists the volumes of ids marked handed over.
func marked(t *testing.T, h *cliHarness, ids []string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		hs, err := h.e.Handovers(h.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) > 0 {
			out = append(out, id)
		}
	}
	return out
}

// neverAnswers makes n take every request and answer none (until the test ends): how many it
// took.
func neverAnswers(t *testing.T, n *fakeNomad) *atomic.Int32 {
	var asked atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	return &asked
}

// saysAll fails the test unless err, what the command named by what returned, says each of
// wants.
func saysAll(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", what, err, want)
		}
	}
}

// shortTimeout is n's client with each request bounded by d.
func shortTimeout(n *fakeNomad, d time.Duration) func() (*nomad.Client, error) {
	return func() (*nomad.Client, error) {
		c, err := n.client()
		if c != nil {
			c.Timeout = d
		}
		return c, err
	}
}

// A Nomad whose writes hang (its Raft cannot commit) while it answers reads: register --all
// sends one registration, which stays unsettled, and leaves the other volumes as they were.
func TestNomadRegisterAllStopsAtANomadThatDoesNotAnswer(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 4)
	n := newFakeNomad(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return http.StatusInternalServerError, "too late"
	})
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, All: true, Nomad: shortTimeout(n, 200*time.Millisecond)})
	n.mu.Lock()
	puts := len(n.puts)
	n.mu.Unlock()
	if puts != 1 {
		t.Errorf("register --all against a Nomad that answers no registration sent %d registrations, want 1 (then it stops asking)", puts)
	}
	if got := marked(t, h, ids); len(got) != 1 || got[0] != "db" {
		t.Errorf("volumes marked handed over: %v, want only db, whose registration got no answer", got)
	}
	saysAll(t, "register --all", err, `volume "db"`, "no answer within", `volumes "v1", "v2", "v3", "v4": not asked`, "Nomad at "+n.srv.URL, "volctl nomad register --all` again once it answers")
}

// Nomad's 429 (its http_max_conns_per_client, a proxy's rate limit) to the first volume's
// question: the command asks nothing more, and says when to run it again for the rest.
func TestNomadRegisterOfManyStopsAtA429(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	var asked atomic.Int32
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Retry-After", "30")
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
	})
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Volumes: ids, Nomad: n.client})
	if asked.Load() != 1 {
		t.Errorf("Nomad answering 429 was asked %d times, want once", asked.Load())
	}
	saysAll(t, fmt.Sprintf("register of %v", ids), err, "429", "in 30s", `volumes "v1", "v2", "v3": not asked`, "`volctl nomad register v1 v2 v3` again")
	if got := marked(t, h, ids); len(got) != 0 {
		t.Errorf("volumes marked handed over: %v, want none", got)
	}
}

// Ctrl-C during the first volume's registration: the command ends there.
func TestNomadRegisterOfManyEndsAtCtrlC(t *testing.T) {
	h := nomadHarness(t)
	manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		cancel()
		<-r.Context().Done()
		return http.StatusInternalServerError, "too late"
	})
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(ctx, &NomadRegisterOptions{IO: ios, Engine: h.engine, All: true, Nomad: n.client})
	n.mu.Lock()
	puts := len(n.puts)
	n.mu.Unlock()
	if puts != 1 {
		t.Errorf("register --all interrupted during the first registration sent %d, want 1", puts)
	}
	saysAll(t, "register --all interrupted", err, "interrupted", `volumes "v1", "v2", "v3": not asked: the command was interrupted (context canceled); run `+"`volctl nomad register --all` again")
	if err != nil && strings.HasSuffix(err.Error(), "once it answers") {
		t.Errorf("register --all interrupted: %v, want no wait for an answer", err)
	}
}

// nomad status of every volume against a Nomad that takes requests and never answers: one
// request, and a row for every volume, the others' saying they were not asked.
func TestNomadStatusOfManyStopsAtANomadThatDoesNotAnswer(t *testing.T) {
	h := nomadHarness(t)
	manyVolumes(t, h, 4)
	n := newFakeNomad(t)
	asked := neverAnswers(t, n)
	ios, _, out, _ := iostreams.Test()
	err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: shortTimeout(n, 200*time.Millisecond)})
	if asked.Load() != 1 {
		t.Errorf("a Nomad that never answers was asked %d times, want once", asked.Load())
	}
	if rows := strings.Count(out.String(), "\n"); rows != 6 {
		t.Errorf("status table has %d lines, want a header and 5 rows:\n%s", rows, out)
	}
	saysAll(t, "status", err, "no answer within", `volumes "v1", "v2", "v3", "v4": not asked`, "`volctl nomad status` again once it answers")
}

// release --all against a Nomad that does not answer: one question; every mark stays.
func TestNomadReleaseAllStopsAtANomadThatDoesNotAnswer(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	for _, id := range ids {
		if _, err := h.e.HandOver(h.ctx, id, engine.HandoverTarget{Address: n.srv.URL}, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	asked := neverAnswers(t, n)
	_, err := runNomadRelease(h, shortTimeout(n, 200*time.Millisecond), func(o *NomadReleaseOptions) { o.Volumes, o.All = nil, true })
	if asked.Load() != 1 {
		t.Errorf("a Nomad that never answers was asked %d times, want once", asked.Load())
	}
	if got := marked(t, h, ids); len(got) != len(ids) {
		t.Errorf("marks left: %v, want all of %v", got, ids)
	}
	saysAll(t, "release --all", err, "no answer within", `volumes "v1", "v2", "v3": not asked`, "`volctl nomad release --all` again once it answers")
}

// The volumes not asked are named, the first ten of them when there are more.
func TestNamedVolumesNamesTenAtMost(t *testing.T) {
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("v%d", i))
	}
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{ids[:1], `volume "v0"`},
		{ids[:2], `volumes "v0", "v1"`},
		{ids[:10], `volumes "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"`},
		{ids, `volumes "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9" and 2 more`},
	} {
		if got := namedVolumes(tc.ids); got != tc.want {
			t.Errorf("namedVolumes(%d ids) = %s, want %s", len(tc.ids), got, tc.want)
		}
	}
}

// A handover of many volumes of one plugin asks Nomad for the plugin once: it asked once per
// volume, as many requests as volumes (each bounded by the request timeout). The health Nomad
// gives with each volume it reads back stands for the plugin's after that: a plugin whose
// nodes turn unhealthy part way is named for the volumes after, which are not registered.
func TestNomadRegisterAsksForThePluginOnce(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 4)
	n := newFakeNomad(t)
	var lookups atomic.Int32
	n.onPlugin = func() { lookups.Add(1) }
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		n.mu.Lock()
		taken := len(n.puts)
		n.mu.Unlock()
		if taken == 2 { // the plugin's node goes down as the second volume is registered
			n.nodesDown.Store(1)
		}
		return 0, ""
	})
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: ids})
	if got := lookups.Load(); got != 1 {
		t.Errorf("a handover of %d volumes of plugin hp asked Nomad for the plugin %d times, want once", len(ids), got)
	}
	if got := marked(t, h, ids); len(got) != 2 {
		t.Errorf("handed over %q; want the two registered before the plugin's node went down", got)
	}
	saysAll(t, "register once the plugin's node is down", err, `volume "v2"`, `plugin "hp"`, "is not healthy", "nodes 0/1 healthy")
}
