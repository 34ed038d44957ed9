package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/store"
)

// A volume handed over with no region named (the agent's own) is asked for there by nomad
// release and nomad status, whatever NOMAD_REGION says now: with NOMAD_REGION naming another
// region of the federation, the api module added it to the request, the agent forwarded the
// question to that region, which never had the volume, and its 404 took the volume back while
// the home region still had it (two orchestrators on one volume).
func TestNomadReleaseAsksTheRegionItWasHandedOverIn(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	// Region eu is another region's state: it has no such volume, at a higher index.
	inner := a.srv.Config.Handler
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reg := r.URL.Query().Get("region"); reg != "" {
			w.Header().Set("X-Nomad-Index", "900")
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		inner.ServeHTTP(w, r)
	})
	t.Setenv("NOMAD_REGION", "eu")
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("with NOMAD_REGION=eu, nomad release took back a volume the agent's own region has: %v", err)
	}
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "still registered in Nomad") {
		t.Fatalf("release while the home region has it: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	// nomad status too: Nomad's copy, from the home region.
	ios, _, out, _ := iostreams.Test()
	err = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client,
		Volumes: []string{"db"}, Exporter: exportFlags{JSON: true}})
	var st []NomadVolumeStatus
	if jerr := json.Unmarshal(out.Bytes(), &st); jerr != nil || len(st) != 1 || !st[0].Registered || err != nil {
		t.Fatalf("status with NOMAD_REGION=eu: %s (%v), want Nomad's copy from the region it was handed over in", out, err)
	}
}

// A volume handed over to one cluster is refused by nomad register against another (exit 4,
// naming where it is) before anything is asked of that one: its plugin's absence or health
// there is no reason, and "run its job first" no remedy, since the registration would be
// refused once it ran.
func TestNomadRegisterElsewhereSaysWhereItIsFirst(t *testing.T) {
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	inner := b.srv.Config.Handler
	b.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/") { // the plugin does not run there
			w.Header().Set("X-Nomad-Index", "1")
			http.Error(w, "plugin not found", http.StatusNotFound)
			return
		}
		inner.ServeHTTP(w, r)
	})
	_, _, err := registerIn(h, b)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "already handed over to Nomad at "+a.srv.URL) || strings.Contains(err.Error(), "run its job first") {
		t.Fatalf("register against another cluster of a volume handed over to %s: %v (exit %d), want exit 4 naming where it is", a.srv.URL, err, ExitCode(err))
	}
	// Its --dry-run says what the registration would: refused for the handover (exit 4), not
	// that the plugin is missing there (exit 1, "run its job first"), in text (naming where it
	// is) and in JSON (its would_fail).
	for _, asJSON := range []bool{false, true} {
		said, err := dryRunSaid(h, b, asJSON)
		if ExitCode(err) != ExitConflict || !asJSON && !strings.Contains(said, "handed over to Nomad at "+a.srv.URL) || !strings.Contains(said, "it is handed over elsewhere") ||
			strings.Contains(said, "run its job first") {
			t.Errorf("register --dry-run (json %v) against another cluster of a volume handed over to %s: exit %d, said:\n%s\nwant exit 4 as the registration, naming where it is", asJSON, a.srv.URL, ExitCode(err), said)
		}
	}
}

// The dry run of a volume handed over elsewhere asks the cluster it would go to nothing, as the
// registration does: it read Nomad's copy and its volumes there first, so a cluster down, or
// one refusing the read (a token without csi-read-volume there, a 500), made the plan exit 1
// with that cluster's error ("run it again") where the registration exits 4 every time
// (review30d).
func TestNomadRegisterDryRunElsewhereAsksThatClusterNothing(t *testing.T) {
	for _, how := range []string{"down", "403", "500"} {
		t.Run(how, func(t *testing.T) {
			h := nomadHarness(t)
			a, b := newFakeNomad(t), newFakeNomad(t)
			if _, _, err := registerIn(h, a); err != nil {
				t.Fatal(err)
			}
			var volumeReads atomic.Int32
			inner := b.srv.Config.Handler
			b.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/v1/volume") {
					volumeReads.Add(1)
					status := map[string]int{"403": http.StatusForbidden, "500": http.StatusInternalServerError}[how]
					http.Error(w, "Permission denied", status)
					return
				}
				inner.ServeHTTP(w, r)
			})
			if how == "down" {
				b.srv.Close()
			}
			_, _, err := registerIn(h, b)
			if ExitCode(err) != ExitConflict {
				t.Fatalf("register against Nomad B (%s) of a volume handed over to A: %v (exit %d), want exit 4", how, err, ExitCode(err))
			}
			volumeReads.Store(0)
			for _, asJSON := range []bool{false, true} {
				said, err := dryRunSaid(h, b, asJSON)
				if ExitCode(err) != ExitConflict || !strings.Contains(said, "it is handed over elsewhere") ||
					!asJSON && (!strings.Contains(said, "handed over to Nomad at "+a.srv.URL) || !strings.Contains(said, "volctl nomad release db")) {
					t.Errorf("register --dry-run (json %v) against Nomad B (%s) of a volume handed over to A at %s: exit %d, said:\n%s\nwant exit 4 as the registration, naming where it is and how to take it back", asJSON, how, a.srv.URL, ExitCode(err), said)
				}
			}
			if n := volumeReads.Load(); n != 0 {
				t.Errorf("the dry runs read Nomad B's volumes %d times; want none, as the registration", n)
			}
		})
	}
}

// A volume whose create or delete was interrupted (state creating or deleting) is refused by
// nomad register (exit 4, "not ready", `volctl reconcile`): its --dry-run said "Would
// register" and exit 0, so a CI gating the handover on the plan let it go on to a refusal. Now
// the plan says the registration would not go through, for the same reason, exit 4.
func TestNomadRegisterDryRunOfAVolumeNotReady(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	updateStore(t, h, func(tx *store.Tx) error {
		v, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		v.State = store.VolumeDeleting // a `volctl volume delete` killed part way
		return tx.Volumes().Update(&v)
	})
	registerAndPlanRefused(t, h, a, "a volume being deleted", "not ready", "volctl reconcile")
}

// A volume recorded as attached with no claim holding it (a ControllerUnpublishVolume a forced
// detach could not send) is refused by nomad register without --force (exit 4, `volctl
// reconcile`): its --dry-run said "Would register" and exit 0. Now the plan says it would be
// refused, as it says of an owed NodeExpandVolume; with --force, neither refuses.
func TestNomadRegisterDryRunOfAVolumeOwedAnUnpublish(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	updateStore(t, h, func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "db", PluginID: "hp", NodeID: "n1", ControllerPublished: true})
	})
	registerAndPlanRefused(t, h, a, "a volume owed a ControllerUnpublishVolume", "ControllerUnpublishVolume", `attached to node "n1"`)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true, Force: true}); err != nil {
		t.Errorf("register --dry-run --force of a volume owed a ControllerUnpublishVolume: %v, want it to go through, as the registration does", err)
	}
}

// updateStore changes the state of harness h's engine in one transaction of update, as
// another volctl (or one killed part way) left it.
func updateStore(t *testing.T, h *cliHarness, update func(tx *store.Tx) error) {
	t.Helper()
	st, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(h.ctx, update)
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
}

// registerAndPlanRefused checks that nomad register of volume db (what) is refused, exit 4,
// saying why, and that its --dry-run, as text and as JSON, says the same with the same exit
// (the text wayOut too), nothing sent to Nomad a, nothing marked.
func registerAndPlanRefused(t *testing.T, h *cliHarness, a *fakeNomad, what, why, wayOut string) {
	t.Helper()
	_, _, err := registerIn(h, a)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), why) {
		t.Fatalf("register of %s: %v (exit %d), want exit 4 saying %q", what, err, ExitCode(err), why)
	}
	for _, asJSON := range []bool{false, true} {
		said, err := dryRunSaid(h, a, asJSON)
		if ExitCode(err) != ExitConflict || !strings.Contains(said, why) || !asJSON && !strings.Contains(said, wayOut) {
			t.Errorf("register --dry-run (json %v) of %s: exit %d, said:\n%s\nwant exit 4 as the registration, saying %q", asJSON, what, ExitCode(err), said, why)
		}
	}
	a.mu.Lock()
	puts := len(a.puts)
	a.mu.Unlock()
	if puts > 0 || handedOver(t, h) {
		t.Errorf("Nomad was sent %d registration(s), marked %v; want none", puts, handedOver(t, h))
	}
}

// dryRunSaid runs nomad register --dry-run of volume db against Nomad n, its plan as text or
// as JSON: what it printed, then its error after "Error: ", and the error.
func dryRunSaid(h *cliHarness, n *fakeNomad, asJSON bool) (string, error) {
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
		Exporter: exportFlags{JSON: asJSON}})
	said := out.String()
	if err != nil {
		said += "\nError: " + err.Error()
	}
	return said, err
}
