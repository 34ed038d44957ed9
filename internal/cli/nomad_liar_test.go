package cli

import (
	"net/http"
	"strings"
	"testing"
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
	b.onPut = func(w http.ResponseWriter, r *http.Request) (int, string) {
		b.mu.Lock()
		b.vols["default/db"] = true
		b.mu.Unlock()
		b.notNomad404.Store(true)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return -1, ""
	}
	_, _, err = registerIn(h2, b)
	if !handedOver(t, h2) {
		t.Fatalf("a registration Nomad took, answered by a dropped connection, lost its mark on a proxy's 404: %v", err)
	}
}
