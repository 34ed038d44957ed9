package cli

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// nomad release while Nomad elects a leader: its read of the volume is answered "No cluster
// leader" (a 500 from Nomad's HTTP layer; a 503 from a proxy that maps it). The volume stays
// marked, and the error says what to run: the same release again once Nomad answers, not
// only --force (which is for a cluster that is gone). Once Nomad has a leader again, the
// release takes the volume back.
func TestNomadReleaseDuringALeaderElection(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			var noLeader atomic.Bool
			a.srv.Config.Handler = func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if noLeader.Load() {
						http.Error(w, "No cluster leader", status)
						return
					}
					next.ServeHTTP(w, r)
				})
			}(a.srv.Config.Handler)
			if _, _, err := registerIn(h, a); err != nil {
				t.Fatal(err)
			}
			a.mu.Lock()
			delete(a.vols, "default/db") // deregistered in Nomad
			a.mu.Unlock()
			noLeader.Store(true)
			_, err := runNomadRelease(h, a.client, nil)
			if !handedOver(t, h) {
				t.Fatalf("release took the volume back while Nomad had no leader to ask: %v", err)
			}
			for _, want := range []string{"No cluster leader", "stays marked handed over", "`volctl nomad release db` again once Nomad answers"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("release: %v\nwant it to say %q", err, want)
				}
			}
			noLeader.Store(false)
			if _, err := runNomadRelease(h, a.client, nil); err != nil || handedOver(t, h) {
				t.Fatalf("release once Nomad has a leader: %v (marked: %v)", err, handedOver(t, h))
			}
		})
	}
}
