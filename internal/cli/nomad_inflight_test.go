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
)

// A registration whose outcome Nomad did not say, followed by Nomad's own 404 for the volume:
// the 404 does not prove Nomad will not apply the registration (it applies writes through
// Raft, and answers a read without waiting for a write in flight: the request on its way to
// the leader, its entry appended but not committed, or committed by the next leader). The
// volume stays marked handed over, the error says what to run to finish or take it back, and
// both work.
func TestNomadRegisterInFlightKeepsTheMarkOnA404(t *testing.T) {
	hangUp := func(w http.ResponseWriter, r *http.Request) (int, string) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return -1, ""
	}
	for _, tc := range []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request) (int, string)
		timeout time.Duration
		want    string
	}{
		{"connection reset after the request was sent", hangUp, 0, "did not answer the registration"},
		{"no answer within the timeout", func(w http.ResponseWriter, r *http.Request) (int, string) {
			<-r.Context().Done()
			return -1, ""
		}, 300 * time.Millisecond, "no answer within 300ms"},
		{"a gateway's 504", func(w http.ResponseWriter, r *http.Request) (int, string) {
			return http.StatusGatewayTimeout, "upstream timed out"
		}, 0, "504: upstream timed out"},
		{"Raft lost the leadership while committing it", func(w http.ResponseWriter, r *http.Request) (int, string) {
			return http.StatusInternalServerError, "rpc error: leadership lost while committing log"
		}, 0, "500: rpc error: leadership lost while committing log"},
		{"the RPC to the leader broke", func(w http.ResponseWriter, r *http.Request) (int, string) {
			return http.StatusInternalServerError, "rpc error: EOF"
		}, 0, "500: rpc error: EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.setOnPut(tc.answer) // and Nomad does not have the volume when asked right after
			client := func() (*nomad.Client, error) {
				c, err := a.client()
				if c != nil && tc.timeout > 0 {
					c.Timeout = tc.timeout
				}
				return c, err
			}
			ios, _, _, _ := iostreams.Test()
			err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}})
			if !handedOver(t, h) {
				t.Fatalf("a registration Nomad did not settle lost its mark on Nomad's 404 right after, though Nomad may still apply it: %v", err)
			}
			for _, want := range []string{tc.want, `no volume "db" (namespace default) now`, "may yet apply", "stays marked handed over",
				"`volctl nomad register db` again finishes", "`nomad volume status -namespace default db`", "`volctl nomad release db`"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("register: %v\nwant it to say %q", err, want)
				}
			}
			if _, cerr := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); cerr == nil {
				t.Error("volctl claimed the volume while Nomad may yet register it")
			}
			// Nomad applies the registration after all: the same command finishes the handover.
			a.take("default", "db")
			a.setOnPut(nil)
			if out, _, err := registerIn(h, a); err != nil || !strings.Contains(out, "Updated volume") || !handedOver(t, h) {
				t.Fatalf("the same command again: %q, %v (marked: %v)", out, err, handedOver(t, h))
			}
			// Or it never did (deregistered here): release takes it back.
			deregisteredThenReleased(t, h, a, a.client)
		})
	}
}

// A registration that never got a connection to Nomad (Nomad went away after volctl read its
// copy of the volume) cannot have been taken: the mark goes, and the error says the
// registration did not reach Nomad. A registration Nomad settled with an error of its own (a
// 500 from its validation) and a 404 after still loses the mark.
func TestNomadRegisterNeverSentLosesTheMark(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	var gone atomic.Bool
	a.srv.Config.Handler = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") && !gone.Swap(true) {
				// The read before the registration: answered, and then nothing listens.
				w.Header().Set("Connection", "close")
				next.ServeHTTP(w, r)
				a.srv.Listener.Close()
				return
			}
			next.ServeHTTP(w, r)
		})
	}(a.srv.Config.Handler)
	_, _, err := registerIn(h, a)
	if len(a.puts) != 0 {
		t.Fatalf("the registration reached Nomad: %q", a.puts)
	}
	if handedOver(t, h) {
		t.Errorf("a registration that never reached Nomad left the volume marked: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "did not receive the registration (no connection to it)") {
		t.Errorf("register with Nomad gone: %v, want it to say Nomad did not receive the registration", err)
	}

	h2 := nomadHarness(t)
	b := newFakeNomad(t)
	b.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusInternalServerError, "no CSI plugin named: hp could be found"
	})
	if _, _, err := registerIn(h2, b); err == nil || handedOver(t, h2) {
		t.Errorf("a registration Nomad refused with its 500, then a 404: %v (marked: %v), want the mark gone", err, handedOver(t, h2))
	}
}

// nomad release right after a registration whose outcome Nomad did not say: Nomad's 404 is
// no more its word then than it was to the registration (it may yet apply it), so the volume
// stays marked (exit 4) and the error says what settles it. A later registration Nomad refuses
// for certain says nothing of that one: the mark stays unsettled. One Nomad answers OK settles
// it, and then release takes the volume back once Nomad has let go of it.
func TestNomadReleaseAfterAnUnsettledRegistrationKeepsTheMark(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.setOnPut(hangUp)
	if _, _, err := registerIn(h, a); err == nil || !handedOver(t, h) {
		t.Fatalf("register without an answer: %v (marked: %v)", err, handedOver(t, h))
	}
	released := func(when string) {
		t.Helper()
		_, err := runNomadRelease(h, a.client, nil)
		if !handedOver(t, h) {
			t.Fatalf("%s: nomad release took the volume back on Nomad's 404, though Nomad may yet apply the registration it did not answer: %v", when, err)
		}
		for _, want := range []string{"says it has no such volume", "may yet apply it", "stays marked handed over",
			"volctl nomad register db` (NOMAD_REGION unset) again settles it", "`env -u NOMAD_REGION nomad volume deregister -namespace default db`", "`volctl nomad release --force db`"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: release: %v\nwant it to say %q", when, err, want)
			}
		}
		if ExitCode(err) != ExitConflict {
			t.Errorf("%s: release: exit %d, want %d", when, ExitCode(err), ExitConflict)
		}
	}
	released("right after")
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusBadRequest, "bad request"
	})
	if _, _, err := registerIn(h, a); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("register refused with a 400: %v", err)
	}
	released("after a registration Nomad refused")
	a.setOnPut(nil)
	if out, _, err := registerIn(h, a); err != nil || !strings.Contains(out, "Registered volume") {
		t.Fatalf("register answered OK: %q, %v", out, err)
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || hs[0].Unsettled {
		t.Fatalf("mark after a registration Nomad answered OK: %+v, want it settled", hs)
	}
	deregisteredThenReleased(t, h, a, a.client)
}

// A registration Nomad did not answer, and then Nomad has another volume by the ID (someone
// else's, registered meanwhile): Nomad refuses to apply ours while that one is there, but ours
// may still be on its way, and once that one is deregistered Nomad would apply it. The mark
// stays (unsettled), and the error says so, does not advise deregistering the other one, and
// names --force as the way back once Nomad is done with the request. A registration Nomad
// settled (refused with its own error) over that other volume loses the mark.
func TestNomadRegisterInFlightBesideAnotherVolumeKeepsTheMark(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request) (int, string)
		marked bool
	}{
		{"no answer", func(w http.ResponseWriter, r *http.Request) (int, string) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return -1, ""
		}, true},
		{"refused by Nomad", func(w http.ResponseWriter, r *http.Request) (int, string) {
			return http.StatusInternalServerError, "volume identity cannot be updated: db"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
				// Someone else registers their volume under the ID while ours is on its way.
				a.mu.Lock()
				a.vols["default/db"] = true
				a.readBack = func(v map[string]any) { v["PluginID"], v["ExternalID"] = "ebs", "someone-elses-disk" }
				a.mu.Unlock()
				return tc.answer(w, r)
			})
			_, _, err := registerIn(h, a)
			if handedOver(t, h) != tc.marked {
				t.Fatalf("marked: %v, want %v, after %s and Nomad has another volume by the ID: %v", !tc.marked, tc.marked, tc.name, err)
			}
			if !tc.marked {
				return
			}
			if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || !hs[0].Unsettled {
				t.Errorf("mark: %+v, want it unsettled", hs)
			}
			for _, want := range []string{"another volume", `plugin_id "ebs"`, "may yet apply", "once that one is deregistered", "stays marked handed over", "`volctl nomad release --force db`"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("register: %v\nwant it to say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "nomad volume deregister") && !strings.Contains(err.Error(), "not `nomad volume deregister") {
				t.Errorf("register: %v\nadvises deregistering Nomad's volume, which is another one", err)
			}
			if _, cerr := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); cerr == nil {
				t.Error("volctl claimed the volume while Nomad may yet register it")
			}
			// Release refuses it (Nomad has a volume by the ID), and its --force comes with the
			// same caveat.
			_, rerr := runNomadRelease(h, a.client, nil)
			if !handedOver(t, h) || ExitCode(rerr) != ExitConflict || !strings.Contains(rerr.Error(), "`volctl nomad release --force db` takes it back once Nomad is done with the registration") {
				t.Errorf("release: %v (exit %d, marked %v), want exit 4 saying --force waits for Nomad to be done with the registration", rerr, ExitCode(rerr), handedOver(t, h))
			}
		})
	}
}

// Nomad's HTTP layer answers every error of the RPC behind a registration with a 500 and its
// text, Raft's and the RPC's failures after which the write may still be applied as much as its
// refusals: no code or header tells them apart. Only a 500 whose text is one Nomad returns for
// a registration it did not apply (its checks before its Raft apply, its state store's
// refusal, no leader) settles the registration; any other 500 (a text not known: another Nomad
// version's, a proxy's), or another 5xx, keeps the mark on a 404 after, unsettled.
func TestNomadRegisterUnknown500IsUnsettled(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		marked bool
	}{
		{500, "no", true},
		{500, "internal error", true},
		{500, "rpc error: rpc: can't find service CSIVolume.Register", true},
		{500, "rpc error: failed to get conn: dial tcp 10.0.0.2:4647: i/o timeout", true},
		{500, "rpc error: node is not the leader", true},
		{501, "validation: missing volume ID", true},
		{507, "insufficient storage", true},
		{500, "validation: missing volume ID", false},
		{500, "missing volume definition", false},
		{500, "no CSI plugin named: hp could be found", false},
		{500, "rpc error: no healthy controllers for CSI plugin: hp", false},
		{500, "rpc error: rpc error: unable to update volume: volume external ID cannot be updated", false},
		{500, "controller validate volume: CSI.ControllerValidateVolume: rpc error: code = InvalidArgument desc = no", false},
		{500, "volume identity cannot be updated: db", false},
		{500, "volume db is in nonexistent namespace team", false},
		{500, "rpc error: No cluster leader", false},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.body), func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) { return tc.status, tc.body })
			_, _, err := registerIn(h, a)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d: %s", tc.status, tc.body)) {
				t.Fatalf("register: %v, want it to say what Nomad answered", err)
			}
			if handedOver(t, h) != tc.marked {
				t.Fatalf("marked: %v, want %v, after Nomad's %d %q and its 404: %v", !tc.marked, tc.marked, tc.status, tc.body, err)
			}
			if !tc.marked {
				return
			}
			if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || !hs[0].Unsettled {
				t.Errorf("mark: %+v, want it unsettled", hs)
			}
			if !strings.Contains(err.Error(), "may yet apply") || !strings.Contains(err.Error(), "`volctl nomad register db` again finishes") {
				t.Errorf("register: %v\nwant it to say Nomad may yet apply it, and what to run", err)
			}
			if strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "answered the registration with an error after which it may still apply it") {
				t.Errorf("register: %v\ncalls an answer that does not say Nomad did not apply it a refusal", err)
			}
		})
	}
}

// A registration Nomad did not answer, of a volume Nomad did not have before, that Nomad has
// when asked right after: that is the registration applied (one request, no retry), so the
// mark stays settled, and release takes it back once Nomad has let go of it. Of a volume
// Nomad had before (an update), its having it says nothing of the update: unsettled.
func TestNomadRegisterUnansweredButAppliedIsSettled(t *testing.T) {
	for _, had := range []bool{false, true} {
		t.Run(fmt.Sprintf("had it before: %v", had), func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			if had { // registered, then taken back with --force while Nomad kept it
				if _, _, err := registerIn(h, a); err != nil {
					t.Fatal(err)
				}
				if _, err := runNomadRelease(h, a.client, func(o *NomadReleaseOptions) { o.Force = true }); err != nil || handedOver(t, h) {
					t.Fatalf("release --force: %v", err)
				}
			}
			a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
				a.take("default", "db")
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return -1, ""
			})
			_, _, err := registerIn(h, a)
			hs, _ := h.e.Handovers(h.ctx, "db")
			if err == nil || len(hs) != 1 || hs[0].Unsettled != had {
				t.Fatalf("register: %v; mark %+v, want it unsettled: %v", err, hs, had)
			}
			if had {
				return
			}
			deregisteredThenReleased(t, h, a, a.client)
		})
	}
}
