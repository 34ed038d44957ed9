package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// A volume whose registration at Nomad A ended unsettled; nomad status run with NOMAD_ADDR
// at Nomad B. The note's advice (`volctl nomad register db` again finishes the handover) must
// run as written where it is given.
func TestNomadStatusUnsettledNoteAdviceRunsAsWrittenFromAnotherAddress(t *testing.T) {
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusInternalServerError, "rpc error: EOF"
	})
	if _, _, err := registerIn(h, a); err == nil || !handedOver(t, h) {
		t.Fatalf("register answered 500: %v", err)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: b.client}); err != nil {
		t.Logf("nomad status: %v", err)
	}
	notes := errOut.String()
	if !strings.Contains(notes, "`volctl nomad register db` again finishes the handover") {
		return
	}
	_, _, err := registerIn(h, b)
	if err != nil {
		t.Errorf("status at B:\n%s%s\nits advice `volctl nomad register db`, run as written (at B): %v", out, notes, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.puts) > 0 {
		t.Errorf("the advised register sent the volume to B, not where it was handed over")
	}
}
