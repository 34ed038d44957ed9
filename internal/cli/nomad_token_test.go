package cli

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// NOMAD_TOKEN's token expires (an ACL token with a TTL) while register --all hands volumes
// over: Nomad answers every later request 403 "ACL token expired". Before, the command went
// on asking about each of the rest, every one refused the same, one error per volume; a
// handover of hundreds asked hundreds of times. Now it stops at the first such refusal, names
// the volumes it did not ask about and says to set a token Nomad has; what it handed over
// before stays handed over, the rest unmarked, and the same command again finishes the run.
func TestNomadRegisterAllStopsWhenTheTokenExpires(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 4)
	n := newFakeNomad(t)
	var expired atomic.Bool
	var refused atomic.Int32
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if expired.Load() {
			refused.Add(1)
			http.Error(w, "ACL token expired", http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
	var took atomic.Int32
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		if took.Add(1) == 2 { // db's taken; the token expires as v1's goes
			expired.Store(true)
			return http.StatusForbidden, "ACL token expired"
		}
		return 0, ""
	})
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, All: true, Nomad: n.client})
	if got := refused.Load(); got > 1 {
		t.Errorf("after the token expired, Nomad was asked %d more times, want at most once (the question after v1's refused registration)", got)
	}
	saysAll(t, "register --all", err, `volumes "v2", "v3", "v4": not asked`, "token has expired", "nomad acl token self")
	if err != nil && strings.Contains(err.Error(), "policy does not grant") {
		t.Errorf("register --all: %v\nwant it not to blame the token's policy: Nomad said the token expired", err)
	}
	if got := marked(t, h, ids); len(got) != 1 || got[0] != "db" {
		t.Errorf("volumes marked handed over: %v, want db alone (v1's registration was refused)", got)
	}
	expired.Store(false)
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, All: true, Nomad: n.client}); err != nil {
		t.Fatalf("register --all again with a token Nomad has: %v", err)
	}
	if got := marked(t, h, ids); len(got) != len(ids) {
		t.Errorf("volumes handed over after the run again: %v, want all of %v", got, ids)
	}
}
