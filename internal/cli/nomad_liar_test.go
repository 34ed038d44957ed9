package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// A Nomad that answers, but not truthfully: a 404 that is not Nomad's own, a refusal after it
// took the volume, a read-back of something else, someone else's volume under the same ID.

// A 404 without Nomad's X-Nomad-Index header is a proxy's page (an ingress with no route to
// Nomad answers "404 page not found"), not Nomad saying it has no such volume: nomad release
// does not take the volume back on it, nor does a registration that got no answer drop the
// mark on it.
func TestNomadA404NotFromNomadIsNotItsWord(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	a.notNomad404.Store(true)
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("nomad release took the volume back on a proxy's 404 while Nomad has it (%v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "not Nomad's") || !strings.Contains(err.Error(), "404 page not found") {
		t.Errorf("release on a proxy's 404: %v, want it to say the 404 is not Nomad's", err)
	}

	// A registration that got no answer, then a proxy's 404 for the question whether Nomad
	// took it: the mark stays.
	h2 := nomadHarness(t)
	b := newFakeNomad(t)
	b.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		b.take("default", "db")
		b.notNomad404.Store(true)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return -1, ""
	})
	_, _, err = registerIn(h2, b)
	if !handedOver(t, h2) {
		t.Fatalf("a registration Nomad took, answered by a dropped connection, lost its mark on a proxy's 404: %v", err)
	}
}

// Nomad takes the registration and then answers 500 (a raft apply that timed out and
// committed after, a proxy failing on the way back): the volume is Nomad's, so it stays marked,
// the error says so and what to run, and the same command again succeeds.
func TestNomadRegisterRefusedAfterTakingKeepsTheMark(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		a.take("default", "db")
		return http.StatusInternalServerError, "rpc error: timed out enqueuing operation"
	})
	_, _, err := registerIn(h, a)
	if !handedOver(t, h) {
		t.Fatalf("Nomad has the volume, and volctl took its mark back on Nomad's 500 (%v): both may claim it", err)
	}
	for _, want := range []string{"500: rpc error", "Nomad has volume \"db\"", "stays marked handed over", "volctl nomad register db"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("register answered 500 after Nomad took it: %v, want it to say %q", err, want)
		}
	}
	a.setOnPut(nil)
	if out, _, err := registerIn(h, a); err != nil || !strings.Contains(out, "Updated volume") || !handedOver(t, h) {
		t.Fatalf("the same command again: %q, %v (marked: %v)", out, err, handedOver(t, h))
	}
}

// Nomad has a volume by the same ID in the namespace that is not this one (another external ID
// or plugin): someone else's. volctl does not overwrite it (Nomad of some versions, or a proxy
// for it, would), marks nothing, and says whose it is; exit 4.
func TestNomadRegisterDoesNotOverwriteAnotherVolume(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other map[string]any
		want  string
	}{
		{"external ID", map[string]any{"ExternalID": "someone-elses-disk", "PluginID": "hp"}, `external_id "someone-elses-disk"`},
		{"plugin", map[string]any{"PluginID": "ebs"}, `plugin_id "ebs"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.vols["default/db"] = true
			a.sent["default/db"] = tc.other
			_, _, err := registerIn(h, a)
			if len(a.puts) > 0 {
				t.Errorf("sent a registration over another volume of the ID: %s", a.puts[0])
			}
			if handedOver(t, h) {
				t.Error("marked handed over, though Nomad's volume of the ID is another")
			}
			if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("register over another volume: %v (exit %d), want exit 4 naming %s", err, ExitCode(err), tc.want)
			}
			// --dry-run says it would be refused.
			ios, _, out, _ := iostreams.Test()
			if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true}); ExitCode(err) != ExitConflict ||
				!strings.Contains(out.String(), "it would be refused") {
				t.Errorf("dry run over another volume: %q, %v", out, err)
			}
		})
	}
}

// Nomad answers the registration OK and has something else: the read-back says what differs,
// and the volume stays marked (Nomad said it took it); a volume missing on read-back was not
// registered, and the mark goes.
func TestNomadRegisterReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(map[string]any)
		marked bool
		want   string
	}{
		{"another ID", func(v map[string]any) { v["ID"] = "db2" }, true, `ID "db2"`},
		{"another namespace", func(v map[string]any) { v["Namespace"] = "team" }, true, `namespace "team"`},
		{"another plugin", func(v map[string]any) { v["PluginID"] = "ebs" }, true, `plugin_id "ebs"`},
		{"another capacity", func(v map[string]any) { v["RequestedCapacityMin"] = 1 }, true, "capacity"},
		{"another access mode", func(v map[string]any) {
			v["RequestedCapabilities"] = []map[string]any{{"AccessMode": "multi-node-multi-writer", "AttachmentMode": "file-system"}}
		}, true, "capabilities"},
		{"missing", nil, false, "says it has no volume \"db\""},
		// Nomad's OK at index 2, its 404 at index 1: from a state before the write it
		// answered, not its word on it.
		{"missing at an earlier index", nil, true, "from a state before the registration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.readBack = tc.edit
			if tc.edit == nil {
				a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
					if tc.marked {
						return answerOK(w, `{}`) // at index 2, and not taken
					}
					io.WriteString(w, `{}`) // at the 404's index (1), and not taken
					return -1, ""
				})
			}
			out, _, err := registerIn(h, a)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "answered the registration OK") {
				t.Errorf("register read back as %s: %q, %v; want an error naming %s", tc.name, out, err, tc.want)
			}
			if handedOver(t, h) != tc.marked {
				t.Errorf("marked handed over: %v, want %v", !tc.marked, tc.marked)
			}
		})
	}
}

// Nomad answers the registration OK, and the read-back gets no answer (the connection drops):
// the volume stays marked, as Nomad said it took it, the error says so and what to run, and
// the same command again registers and checks it.
func TestNomadRegisterReadBackLost(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	var registered atomic.Bool // the first registration's read-back is lost
	var puts atomic.Int32
	a.srv.Config.Handler = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if registered.Load() && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return
			}
			next.ServeHTTP(w, r)
			if r.Method == http.MethodPut && puts.Add(1) == 1 {
				registered.Store(true)
			}
		})
	}(a.srv.Config.Handler)
	_, _, err := registerIn(h, a)
	if !handedOver(t, h) {
		t.Fatalf("Nomad took the registration, and the mark went when reading it back failed: %v", err)
	}
	for _, want := range []string{"answered the registration OK, but reading it back failed", "stays marked handed over", "volctl nomad register db"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read-back lost: %v, want it to say %q", err, want)
		}
	}
	registered.Store(false)
	if out, _, err := registerIn(h, a); err != nil || !strings.Contains(out, "Updated volume") {
		t.Fatalf("the same command again: %q, %v", out, err)
	}
}

// nomad release of a volume Nomad's allocs still claim, in a namespace other than the one the
// shell names now: the refusal's remedy must work as typed. `nomad volume deregister db`
// alone would look in NOMAD_NAMESPACE's namespace (not found there), and Nomad refuses to
// deregister a volume its running allocs claim, so they are named, with their jobs, first.
func TestNomadReleaseRefusalSaysWhatWorks(t *testing.T) {
	h, err := releaseWhileNomadClaims(t, []map[string]any{{"ID": "1b80f67e-0000", "Name": "web.web[0]", "JobID": "web", "ClientStatus": "running"}},
		map[string]any{"1b80f67e-0000": nil}, nil)
	if ExitCode(err) != ExitConflict {
		t.Fatalf("release while Nomad's alloc claims it: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	for _, want := range []string{"web.web[0] (1b80f67e) of job web", "nomad job stop -namespace team web", "nomad volume deregister -namespace team db"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("release refused: %v\nwant it to say %q", err, want)
		}
	}
	// A local claim's refusal says the same.
	_, err = h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"})
	if err == nil || !strings.Contains(err.Error(), "nomad volume deregister -namespace team db") {
		t.Errorf("local claim of the handed-over volume: %v, want it to name the namespace in the deregister", err)
	}
}

// nomad release asked a Nomad whose 404 comes from a state before the one it answered the
// registration from (X-Nomad-Index going backwards: another server or cluster behind the
// address, or one restored from an older snapshot): not its word on the volume. The mark
// stays (exit 4) and the error says what to run; Nomad's 404 from a later state takes it back.
func TestNomadReleaseDoesNotTakeA404FromAnEarlierState(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.index.Store(5) // Nomad applies the registration at index 5
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || hs[0].Index != 5 {
		t.Fatalf("mark after a registration Nomad answered OK at index 5: %+v", hs)
	}
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	a.index.Store(3)
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("release took the volume back on a 404 at index 3, before the registration's 5: %v", err)
	}
	for _, want := range []string{"at index 3", "(index 5)", "not its word", "stays marked handed over", "`volctl nomad release --force db`"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("release: %v\nwant it to say %q", err, want)
		}
	}
	if ExitCode(err) != ExitConflict {
		t.Errorf("release: exit %d, want %d", ExitCode(err), ExitConflict)
	}
	a.index.Store(6) // deregistered at 6
	if _, err := runNomadRelease(h, a.client, nil); err != nil || handedOver(t, h) {
		t.Fatalf("release on Nomad's 404 at index 6: %v (marked: %v)", err, handedOver(t, h))
	}
}

// nomad release refused while Nomad still holds the claim of an alloc that has stopped: Nomad
// frees it only once its ControllerUnpublishVolume succeeds, which it tries again by itself
// while the plugin refuses it (volctl's own, while a local claim stages the volume:
// TestNomadRefusedControllerUnpublishConverges). Stopping the alloc's job, which the refusal
// advised, does nothing (it has stopped); the refusal names the alloc as stopped, and the local
// claims to release.
func TestNomadReleaseRefusalOfAStoppedAllocsClaimSaysWhatWorks(t *testing.T) {
	_, err := releaseWhileNomadClaims(t, []map[string]any{
		{"ID": "1b80f67e-0000", "Name": "web.web[0]", "JobID": "web", "ClientStatus": "failed"},
		{"ID": "2c91a780-0000", "Name": "api.api[0]", "JobID": "api", "ClientStatus": "running"},
	}, map[string]any{"1b80f67e-0000": nil}, map[string]any{"2c91a780-0000": nil})
	if ExitCode(err) != ExitConflict {
		t.Fatalf("release while Nomad holds a stopped alloc's claim: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	for _, want := range []string{
		"web.web[0] (1b80f67e) of job web has stopped (failed)",
		"tries again by itself while the plugin refuses it",
		"release the local claims `volctl volume status db` lists",
		"`env -u NOMAD_REGION nomad volume status -namespace team db` shows Nomad's claims",
		"api.api[0] (2c91a780) of job api", "nomad job stop -namespace team api",
		"nomad volume deregister -namespace team db",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("release refused: %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "job stop -namespace team web") {
		t.Errorf("release refused: %v\nadvises stopping job web, whose alloc has stopped", err)
	}
}

// releaseWhileNomadClaims registers db in namespace team (through NOMAD_NAMESPACE, unset after)
// with a fake Nomad whose copy has the allocs given claiming it, and runs nomad release.
func releaseWhileNomadClaims(t *testing.T, allocs []map[string]any, write, read map[string]any) (*cliHarness, error) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	t.Setenv("NOMAD_NAMESPACE", "team")
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMAD_NAMESPACE", "")
	a.readBack = func(v map[string]any) {
		v["Allocations"], v["WriteAllocs"] = allocs, write
		if read != nil {
			v["ReadAllocs"] = read
		}
	}
	_, err := runNomadRelease(h, a.client, nil)
	return h, err
}
