package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// What answers at NOMAD_ADDR answers a volume's read 200 with JSON of another shape (a proxy's
// or an API gateway's `{"message": ...}`, a session page's JSON): it is no volume, and not
// Nomad's, which answers a volume's read with that volume. Taken for Nomad's copy it would be
// "another volume by that ID" (ID "", plugin "", ...), and release would advise --force, taking
// the volume back from a Nomad that may well have it.
func TestNomadAnswerOfAnotherShapeIsNotAVolume(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.readBack = func(v map[string]any) {
		for k := range v {
			delete(v, k)
		}
		v["message"] = "session expired"
	}
	a.mu.Unlock()
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("released on an answer that is not Nomad's: %v", err)
	}
	if err == nil {
		t.Fatal("release: no error")
	}
	for _, bad := range []string{"another volume", "--force db`"} {
		if strings.Contains(err.Error(), bad) && !strings.Contains(err.Error(), "cluster is gone") {
			t.Errorf("release: %v\nsays %q of an answer that is no volume", err, bad)
		}
	}
	if !strings.Contains(err.Error(), "not Nomad's") {
		t.Errorf("release: %v\nwant it to say the answer is not Nomad's", err)
	}

	// nomad status does not show it as Nomad's copy of the volume.
	ios, _, out, _ := iostreams.Test()
	err = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client})
	if err == nil || !strings.Contains(err.Error(), "not Nomad's") {
		t.Errorf("nomad status: %v, want an error saying the answer is not Nomad's", err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "error") {
		t.Errorf("nomad status table:\n%s\nwant the volume's row to say error, not that Nomad has it", out)
	}
}
