package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// `volctl nomad status` of a volume marked handed over that Nomad does not have: a
// registration whose outcome Nomad did not say (the mark unsettled), or one Nomad took and
// has since deregistered. Before, the table said "HANDED OVER yes, IN NOMAD no" and nothing
// else: neither that the registration may yet be applied nor what settles it, nor that Nomad
// let go of the volume and what takes it back, where register, release and `volctl volume
// status` each say so. Each is noted under the table, with what to run; --json has the mark's
// "unsettled" already.
func TestNomadStatusSaysWhereAMarkedVolumeIs(t *testing.T) {
	status := func(h *cliHarness, n *fakeNomad) (string, string) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client}); err != nil {
			t.Fatalf("nomad status: %v", err)
		}
		return out.String(), errOut.String()
	}

	// In flight: Nomad answered the registration with an error after which it may apply it.
	h := nomadHarness(t)
	n := newFakeNomad(t)
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusInternalServerError, "rpc error: EOF"
	})
	if _, _, err := registerIn(h, n); err == nil || !handedOver(t, h) {
		t.Fatalf("register answered 500: %v (marked: %v)", err, handedOver(t, h))
	}
	out, notes := status(h, n)
	for _, want := range []string{`volume "db"`, "Nomad may have it or yet apply it", "volctl nomad register db` (NOMAD_REGION unset) again finishes the handover",
		"`volctl nomad release db`"} {
		if !strings.Contains(notes, want) {
			t.Errorf("status of a volume whose registration is in flight:\n%s%s\nwant it to say %q", out, notes, want)
		}
	}

	// Settled, then deregistered in Nomad.
	n.setOnPut(nil)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatalf("register again: %v", err)
	}
	if _, notes := status(h, n); notes != "" {
		t.Errorf("status of a volume Nomad has as handed over noted: %s", notes)
	}
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
	out, notes = status(h, n)
	for _, want := range []string{`volume "db" is marked handed over to Nomad at ` + n.srv.URL, "has no volume \"db\" in namespace default",
		"deregistered there", "`volctl nomad release db` takes it back", "`volctl nomad register db` hands it over again"} {
		if !strings.Contains(notes, want) {
			t.Errorf("status of a volume deregistered in Nomad:\n%s%s\nwant it to say %q", out, notes, want)
		}
	}
	if _, err := runNomadRelease(h, n.client, nil); err != nil || handedOver(t, h) {
		t.Errorf("release, as the note says: %v (still marked: %v)", err, handedOver(t, h))
	}
}
