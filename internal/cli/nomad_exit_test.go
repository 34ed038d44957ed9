package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// A handover of many volumes cut short: the first volume is refused (Nomad has another volume
// by its ID: a conflict, exit 4), the next one's registration gets no answer (Nomad gone part
// way), and the rest are not asked. The command exited 4, the conflict's, so a script reading
// 4 as "refused: change something first" did not run it again, and the volumes Nomad never
// got stayed volctl's; any failure that the same command run again may get past (Nomad not
// answering, not asked, an error) now makes it exit 1, and 4 is left for a run whose every
// failure is a refusal. And v1's error blamed a TLS server or something else at NOMAD_ADDR
// ("NOMAD_ADDR must say https://") for a Nomad that had answered this command a moment
// before over plain HTTP: it now says Nomad went away part way. (--dry-run's plan exits 4 when any registration would not go through,
// beside an error or not: docs/json.md.)
func TestNomadRegisterCutShortExitsOneBesideAConflict(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		h := nomadHarness(t)
		ids := manyVolumes(t, h, 3)
		n := newFakeNomad(t)
		// Nomad's volume db is someone else's.
		n.take("default", "db")
		n.mu.Lock()
		n.sent["default/db"] = map[string]any{"ExternalID": "someone-elses", "PluginID": "hp"}
		n.mu.Unlock()
		goneAtV(n) // once asked about v1
		ios, _, _, _ := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Volumes: ids, Nomad: n.client, DryRun: dryRun})
		saysAll(t, "register", err, `volume "db"`, "another", `volume "v1"`, `volumes "v2", "v3": not asked`,
			"having answered this command's earlier requests there: it stopped or restarted part way")
		// Nomad answered this command over plain HTTP a moment before: no TLS mismatch.
		if err != nil && strings.Contains(err.Error(), "NOMAD_ADDR must say https://") {
			t.Errorf("register, Nomad gone at v1 having answered this command before: %v\nblames a TLS mismatch", err)
		}
		if want := map[bool]int{false: ExitError, true: ExitConflict}[dryRun]; ExitCode(err) != want {
			t.Errorf("register (--dry-run %v) of %v, db refused as a conflict, Nomad gone at v1: exit %d, want %d", dryRun, ids, ExitCode(err), want)
		}
	}
}

// So too release: db still in Nomad (refused: exit 4), Nomad gone once asked about v1, v2 not
// asked: exit 1, where it exited 4.
func TestNomadReleaseCutShortExitsOneBesideAConflict(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 2)
	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Volumes: ids, Nomad: n.client}); err != nil {
		t.Fatal(err)
	}
	goneAtV(n)
	_, err := runNomadRelease(h, n.client, func(o *NomadReleaseOptions) { o.Volumes = ids })
	saysAll(t, "release", err, `volume "db"`, "still registered in Nomad", `volume "v1"`, `volume "v2": not asked`)
	if ExitCode(err) != ExitError {
		t.Errorf("release of %v, db still in Nomad, Nomad gone at v1: exit %d, want %d (the command again may finish it)", ids, ExitCode(err), ExitError)
	}
	if got := marked(t, h, ids); len(got) != 3 {
		t.Errorf("volumes still marked handed over: %v, want all three", got)
	}
}

// goneAtV makes n hang up every request about a volume v1, v2...: Nomad gone once asked
// about the first of them.
func goneAtV(n *fakeNomad) {
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/volume/csi/v") {
			hangUp(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	})
}
