package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// TestNomadRegisterAgainOverAnotherVolumeNamesTheWayBack: a volume handed over (settled) whose
// ID Nomad has since given to another volume (deregistered there, someone else's registered
// under it): `volctl nomad register` again is refused, nothing sent, the mark kept, as it
// should; but it advised deregistering that other volume "if it is no one's, or leave this
// volume to volctl", a dead end (volctl claims nothing marked, and its claim refusal names the
// same deregister). It says what a release of the same state says: someone else's, not to be
// deregistered; `volctl nomad release --force` takes it back, which the test then runs. Found
// by helper review72.
func TestNomadRegisterAgainOverAnotherVolumeNamesTheWayBack(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	// Someone else's volume under the ID now: another external ID.
	n.mu.Lock()
	n.sent["default/db"]["ExternalID"] = "someone-elses-storage"
	n.mu.Unlock()
	puts := len(n.puts)
	_, _, err := registerIn(h, n)
	if err == nil {
		t.Fatal("register again over another volume by the ID: no error")
	}
	if len(n.puts) != puts {
		t.Fatalf("register again over another volume sent a registration")
	}
	if !handedOver(t, h) {
		t.Fatalf("the mark went: %v", err)
	}
	// What release says of the same state (still marked, another volume by the ID).
	_, rerr := runNomadRelease(h, n.client, nil)
	t.Logf("release says: %v", rerr)
	msg := err.Error()
	if strings.Contains(msg, "leave this volume to volctl") {
		t.Errorf("register of a volume still marked handed over advises leaving it to volctl, which refuses to claim it while marked:\n%s", msg)
	}
	if !strings.Contains(msg, "volctl nomad release --force") {
		t.Errorf("register of a volume still marked handed over, over another volume by its ID, names no way back (release --force, as release itself says):\n%s", msg)
	}
	if strings.Contains(msg, "deregister that one there first") {
		t.Errorf("register of a volume still marked advises deregistering Nomad's volume of the ID, someone else's:\n%s", msg)
	}
	// The way back it names, followed: the volume is volctl's again and claimed.
	if _, err := runNomadRelease(h, n.client, func(o *NomadReleaseOptions) { o.Force = true }); err != nil {
		t.Fatalf("volctl nomad release --force db, as the refusal advises: %v", err)
	}
	if _, err := h.e.Claim(context.Background(), engine.ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Fatalf("claim of db once taken back: %v", err)
	}
}
