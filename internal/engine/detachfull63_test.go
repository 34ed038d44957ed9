package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A forced detach whose last write (freeing the claims) fails (here the state dir fills up
// right after ControllerUnpublishVolume answered OK) must not report the claims released
// with success: the claims are still recorded (marked releasing), their mounts already gone.
// Before, forceDetach turned the failed commit into a warning ("freeing the claims: ...") and
// returned nil, so Detach listed every claim as Released and `volume detach --force` printed
// "Released ... claim" with exit status 0. Found by helper review63.
func TestForcedDetachWhoseFreeFailsDoesNotSayReleased(t *testing.T) {
	t.Parallel()
	h, after, free := diskFullHarness(t)
	defer free()
	h.create(volume("db"))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	*after = csi.RPCControllerUnpublishVolume
	res, err := h.e.Detach(h.ctx, "db", true)
	*after = ""
	live := h.liveClaims("db")
	if len(live) == 0 {
		t.Fatalf("premise: the claims were freed despite the full disk (%v): the test tests nothing", err)
	}
	if err == nil {
		t.Errorf("forced detach whose freeing of the claims failed returned no error; Released = %+v, warnings:\n%s\nclaims still recorded: %+v",
			res.Released, strings.Join(res.Warnings, "\n"), live)
	}
	for _, r := range res.Released {
		for _, c := range live {
			if c.Alloc == r.Alloc {
				t.Errorf("alloc %q reported released by the forced detach, but its claim is still recorded: %+v", r.Alloc, c)
			}
		}
	}
}
