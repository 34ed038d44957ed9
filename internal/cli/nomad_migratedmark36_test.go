package cli

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/nomad"
)

// A mark migration 0020 rewrote as shown (http://xxxxx@host:port/xxxxx/?token=xxxxx, the key
// and the path's secret gone from the store): taking the volume back asks the Nomad
// NOMAD_ADDR names now, with that environment's credential (the key as the user), not the
// mark's xxxxx; the mark matches it by scheme, host and port, and the volume comes back.
func TestNomadReleaseOfAMigratedMarkUsesTheEnvironmentsCredential(t *testing.T) {
	const key = "k3y-0f-the-gateway-7781"
	h := nomadHarness(t)
	n := newFakeNomad(t)
	var mu sync.Mutex
	var users []string
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		mu.Lock()
		users = append(users, user)
		mu.Unlock()
		n.serve(w, r)
	})
	migrated := strings.Replace(n.srv.URL, "http://", "http://xxxxx@", 1) + "/xxxxx/?token=xxxxx"
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: migrated}, false,
		func(context.Context, bool, engine.VolumeInfo) (engine.Registered, error) {
			return engine.Registered{Index: 5}, nil
		}); err != nil {
		t.Fatal(err)
	}
	n.index.Store(9) // after the registration: Nomad has let go of it since
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	client := func() (*nomad.Client, error) {
		return nomad.NewClient(strings.Replace(n.srv.URL, "http://", "http://"+key+"@", 1))
	}
	out, err := runNomadRelease(h, client, nil)
	if err != nil {
		t.Fatalf("release of a migrated mark: %v\n%s", err, out)
	}
	if info, _ := h.e.Volume(h.ctx, "db"); info.Handover != nil {
		t.Errorf("still marked handed over after release: %+v", info.Handover)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(users) == 0 {
		t.Fatal("release asked Nomad nothing")
	}
	for _, u := range users {
		if u != key {
			t.Errorf("a request carried the user %q, want the environment's %q", u, key)
		}
	}
}
