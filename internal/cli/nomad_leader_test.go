package cli

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
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

// nomad register and nomad status while Nomad elects a leader (or has lost its quorum): every
// read is answered 500 "No cluster leader", and the error said Nomad's words alone, with
// nothing of what they mean or what to do. It now says that Nomad's servers have no leader,
// how to see them, and to run the command again once one is elected; nothing is marked.
func TestNomadRegisterAndStatusDuringALeaderElection(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "rpc error: No cluster leader", http.StatusInternalServerError)
	})
	_, _, err := registerIn(h, a)
	if handedOver(t, h) {
		t.Fatalf("register marked the volume with Nomad leaderless: %v", err)
	}
	ios, _, _, _ := iostreams.Test()
	serr := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}})
	for name, err := range map[string]error{"register": err, "status": serr} {
		for _, want := range []string{"No cluster leader", "no leader", "nomad operator raft list-peers", "run the command again once"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant it to say %q", name, err, want)
			}
		}
	}
}

// nomad register while Nomad cannot reach the plugin's controller: a registration Nomad
// answers 500 "controller validate volume: No path to node" (its servers have no connection to
// the client of the node that runs the controller: Nomad 2.0.5 answered so for half a minute
// after its agent restarted, TestNomadHandoverWhileTheAgentRestarts) or "no healthy
// controllers for CSI plugin" or "no CSI plugin named" (its controllers, or its job, stopped
// since volctl looked). The error said
// Nomad's words alone, "refused the registration", with nothing of what they mean or what to
// do. It now says what Nomad could not reach, how to see it, and to run the command again;
// nothing stays marked, exit 1.
func TestNomadRegisterWhileNomadCannotReachThePluginsController(t *testing.T) {
	for _, c := range []struct{ body, how string }{
		{"rpc error: controller validate volume: No path to node", "`nomad node status`"},
		{"rpc error: no healthy controllers for CSI plugin: hp", "`nomad plugin status hp`"},
		{"rpc error: no CSI plugin named: hp", "run its job"},
	} {
		t.Run(c.how, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.onPut = func(http.ResponseWriter, *http.Request) (int, string) { return http.StatusInternalServerError, c.body }
			_, _, err := registerIn(h, a)
			if handedOver(t, h) || ExitCode(err) != ExitError {
				t.Fatalf("register: %v (exit %d, marked %v), want exit 1 and no mark", err, ExitCode(err), handedOver(t, h))
			}
			for _, want := range []string{c.body[len("rpc error: "):], `plugin "hp"`, c.how, "run the command again"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("register: %v\nwant it to say %q", err, want)
				}
			}
		})
	}
}
