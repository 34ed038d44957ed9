package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// nomad status of a volume handed over at index 5 when what answers says 404 at index 3 (a
// state before the registration: another server or cluster, an older snapshot). release
// refuses to take it back on that word (TestNomadReleaseDoesNotTakeA404FromAnEarlierState);
// the note must not say it was deregistered there and that release takes it back.
func TestNomadStatusNoteOnA404FromAnEarlierStateSaysWhatReleaseSays(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.index.Store(5)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	a.index.Store(3)
	ios, _, out, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client}); err != nil {
		t.Fatalf("nomad status: %v", err)
	}
	notes := errOut.String()
	_, rerr := runNomadRelease(h, a.client, nil)
	if !strings.Contains(notes, "at index 3, from a state before") || !strings.Contains(notes, "refuses to take it back") {
		t.Errorf("status note does not say what release says of that 404:\n%s", notes)
	}
	if strings.Contains(notes, "takes it back") && rerr != nil {
		t.Errorf("status note:\n%s%s\nbut the release it advises fails: %v", out, notes, rerr)
	}
}
