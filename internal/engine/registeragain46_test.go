package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A registration again says what it did, decided under the volume's lock as a create's is: the
// same spec changes nothing, writes nothing and records no event (before, every run of a
// deploy's `volctl register db.hcl` recorded `volume "v" updated by a new registration` and
// printed "registered", whatever it changed); a changed spec is an update whose event names
// what changed (secrets by name only); a larger capacity_min the plugin grew the volume to is
// an expansion.
func TestRegisterAgainSaysWhatItDid(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1")
	register := func(what string, sv spec.Volume, want SubmitOutcome) {
		t.Helper()
		if _, got, err := h.e.RegisterVolumeOutcome(h.ctx, sv); err != nil || got.Outcome != want {
			t.Fatalf("%s: outcome %v (%q changed), %v; want %v", what, got.Outcome, got.Changed, err, want)
		}
	}
	events := func() []string { return h.eventsOf("volume-register", "v", "") }

	register("the first registration", sv, Created)
	register("the same spec again", sv, Unchanged)
	noContext := sv
	noContext.Context = nil // an empty context keeps the stored one (Nomad's rule): no change
	register("the spec without its context", noContext, Unchanged)
	if evs := events(); len(evs) != 1 {
		t.Fatalf("events after registering one spec three times: %q; want the first registration's alone", evs)
	}

	rotated := sv
	rotated.Secrets = spec.Secrets{"token": "r0tat3d-t0ken"}
	rotated.Capabilities = append(rotated.Capabilities, capab(spec.SingleNodeReaderOnly))
	register("the spec with a secret rotated and a capability added", rotated, Updated)
	evs := events()
	if len(evs) != 2 || !strings.Contains(evs[0], "(capabilities, secrets)") || strings.Contains(evs[0], "r0tat3d") {
		t.Errorf("events after the update: %q; want a newer one naming capabilities and secrets, never the secret's value", evs)
	}
	register("the rotated spec again", rotated, Unchanged)

	grown := rotated
	grown.CapacityMin = 2 << 30
	register("the spec with a larger capacity_min", grown, Expanded)
	if v := h.volumeInfo("v"); v.CapacityBytes < 2<<30 {
		t.Errorf("capacity after the expansion: %d; want at least %d", v.CapacityBytes, 2<<30)
	}
	register("the grown spec again", grown, Unchanged)
	if n := len(events()); n != 3 {
		t.Errorf("%d registration events at the end; want 3 (registered, updated, updated by the expansion)", n)
	}
}
