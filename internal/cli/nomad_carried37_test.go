package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/nomadcorpus"
	"github.com/volctl/volctl/internal/spec"
)

// A user carried across: two volumes of the corpus of real Nomad specs (hostpath's demo, with
// a capacity range, two capabilities, a secret and a mount flag; the NFS demo, multi-node, with
// parameters), created here on volctl's own plugin, claimed and released, then handed over to
// Nomad through every mistake on the way, and taken back: Nomad unreachable, a 403 from a
// token without csi-write-volume, a 500 with a body Nomad does not return for a registration
// it did not apply, a volume ID Nomad has with another plugin, NOMAD_NAMESPACE naming another
// namespace. Each error names the volume and Nomad's address and what to run; nothing is left
// half-done on either side: the mark is there only while Nomad has (or may have) the volume, a
// volume not marked is claimed again, and Nomad's volumes are as they were but for what was
// registered. Nomad's words are shown as it said them: the hostpath demo's mount flag "ro"
// was replaced inside each word of them ("rpc er[REDACTED]r"; TestNomadShortMountFlagIsMaskedAsAWordOnly).
func TestNomadUserCarriedAcrossThroughEveryMistake(t *testing.T) {
	dir := nomadcorpus.Dir(t)
	h := nomadHarness(t)
	for _, file := range []string{"demo__csi__hostpath__hostpath.hcl", "demo__csi__nfs__volume.hcl"} {
		src, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		v, diags := spec.NewParser().ParseVolume(file, src, spec.VerbCreate)
		if v == nil || diags.HasErrors() {
			t.Fatalf("%s: %v", file, diags)
		}
		v.PluginID = "hp" // the harness's plugin, volctl's own
		id := v.ID
		if _, err := h.e.CreateVolume(h.ctx, *v); err != nil {
			t.Fatalf("%s: create: %v", file, err)
		}
		claimAndRelease(t, h, id)
		register := func(c func() (*nomad.Client, error)) error {
			ios, _, _, _ := iostreams.Test()
			return nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: c, Volumes: []string{id}})
		}
		marked := func() bool {
			hs, err := h.e.Handovers(h.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return len(hs) == 1
		}
		says := func(what string, err error, wants ...string) {
			t.Helper()
			for _, want := range append([]string{`volume "` + id + `"`}, wants...) {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s, %s: %v\nwant it to say %q", id, what, err, want)
				}
			}
		}

		// Nomad unreachable: nothing marked, and the volume is claimed again.
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		err = register(func() (*nomad.Client, error) { return nomad.NewClient(gone.URL) })
		says("Nomad unreachable", err, gone.URL)
		if marked() || ExitCode(err) != ExitError {
			t.Errorf("%s, Nomad unreachable: marked %v, exit %d, want no mark, exit 1", id, marked(), ExitCode(err))
		}
		claimAndRelease(t, h, id)

		// A token without csi-write-volume: Nomad's 403 to the registration.
		a := newFakeNomad(t)
		client := a.client
		a.setOnPut(func(http.ResponseWriter, *http.Request) (int, string) {
			return http.StatusForbidden, "Permission denied"
		})
		err = register(client)
		says("a 403", err, a.srv.URL, "csi-write-volume")
		if marked() || a.has("default", id) {
			t.Errorf("%s, a 403: marked %v, in Nomad %v, want neither", id, marked(), a.has("default", id))
		}

		// Nomad's volume of the ID is another plugin's: not overwritten, nothing sent.
		a.setOnPut(nil)
		a.mu.Lock()
		a.vols["default/"+id] = true
		a.sent["default/"+id] = map[string]any{"PluginID": "ebs", "ExternalID": "vol-0abc"}
		puts := len(a.puts)
		a.mu.Unlock()
		err = register(client)
		says("another plugin's volume by the ID", err, a.srv.URL, `"ebs"`, "nomad volume deregister")
		a.mu.Lock()
		sent := len(a.puts) - puts
		delete(a.vols, "default/"+id)
		delete(a.sent, "default/"+id)
		a.mu.Unlock()
		if marked() || sent != 0 || ExitCode(err) != ExitConflict {
			t.Errorf("%s, another plugin's volume: marked %v, %d registration(s) sent, exit %d, want no mark, none sent, exit 4", id, marked(), sent, ExitCode(err))
		}

		// A 500 whose body Nomad gives only for one it did not apply: not settled, the mark
		// stays, and the same command again finishes it.
		a.setOnPut(func(http.ResponseWriter, *http.Request) (int, string) {
			return http.StatusInternalServerError, "rpc error: raft apply failed: timed out enqueuing operation"
		})
		err = register(client)
		says("a 500 with a body", err, a.srv.URL, "500: rpc error: raft apply failed: timed out enqueuing operation", "`volctl nomad register "+id+"` again")
		if !marked() {
			t.Errorf("%s, a 500 after which Nomad may apply it: no mark", id)
		}
		if _, cerr := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: id, Alloc: "local-1"}); cerr == nil {
			t.Errorf("%s: a local claim admitted while a registration of it is unsettled", id)
		}
		a.setOnPut(nil)
		if err := register(client); err != nil || !marked() || !a.has("default", id) {
			t.Fatalf("%s: the register again, as advised: %v (marked %v, in Nomad %v)", id, err, marked(), a.has("default", id))
		}

		// Taken back once Nomad let go of it, and claimed here again.
		a.mu.Lock()
		delete(a.vols, "default/"+id)
		a.mu.Unlock()
		if _, err := runNomadRelease(h, client, func(o *NomadReleaseOptions) { o.Volumes = []string{id} }); err != nil || marked() {
			t.Fatalf("%s: release once deregistered: %v (marked %v)", id, err, marked())
		}
		claimAndRelease(t, h, id)

		// NOMAD_NAMESPACE naming another namespace: registered there, said so, and taken back
		// from there whatever it names at the release.
		t.Setenv("NOMAD_NAMESPACE", "team")
		ios, _, out, _ := iostreams.Test()
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{id}}); err != nil || !a.has("team", id) {
			t.Fatalf("%s: register with NOMAD_NAMESPACE=team: %v (in team %v)", id, err, a.has("team", id))
		}
		if !strings.Contains(out.String(), "team") {
			t.Errorf("%s: register with NOMAD_NAMESPACE=team does not say the namespace: %q", id, out)
		}
		t.Setenv("NOMAD_NAMESPACE", "")
		_, err = runNomadRelease(h, client, func(o *NomadReleaseOptions) { o.Volumes = []string{id} })
		says("release while Nomad has it", err, "namespace team", "nomad volume deregister -namespace team "+id)
		a.mu.Lock()
		delete(a.vols, "team/"+id)
		a.mu.Unlock()
		if _, err := runNomadRelease(h, client, func(o *NomadReleaseOptions) { o.Volumes = []string{id} }); err != nil || marked() {
			t.Fatalf("%s: release from team once deregistered there: %v (marked %v)", id, err, marked())
		}
		claimAndRelease(t, h, id)
	}
}

// claimAndRelease claims volume id here for alloc local-0 and releases it: the volume is
// volctl's, whole.
func claimAndRelease(t *testing.T, h *cliHarness, id string) {
	t.Helper()
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: id, Alloc: "local-0"}); err != nil {
		t.Fatalf("claim %s: %v", id, err)
	}
	if _, err := h.e.Release(h.ctx, id, "local-0"); err != nil {
		t.Fatalf("release %s: %v", id, err)
	}
}
