package cli

import (
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// `volume deregister --force` of a claimed volume released the claim first, its mounts gone
// from under the alloc, and said only `Volume "v" deregistered`: it says which claims it
// released, as `volume detach` does, above that line (engine.DeregisterVolumeReleasing).
func TestForcedDeregisterPrintsTheClaimsItReleased(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	h.claim(t, "v", "web-0")
	code, out, errOut := h.runReported("volume", "deregister", "v", "--force", "--yes")
	if want := "Released write claim of alloc \"web-0\"\nVolume \"v\" deregistered\n"; code != 0 || out != want {
		t.Errorf("deregister --force of a claimed volume: exit %d, stdout %q (stderr %q); want exit 0 and %q", code, out, errOut, want)
	}
}
