package engine

import (
	"testing"
)

// An alloc name typed decomposed (e U+0301, as macOS's input sends "é") was stored so by a
// volctl from before the command line read IDs in NFC. The command line now reads the same
// typing as U+00E9: a release of that alloc must still find its claim, not answer "no such
// claim" (a no-op, exit 0) while the claim stays published, and a claim of it must meet the
// claim it has rather than mount the volume a second time for it.
func TestAllocStoredDecomposedIsFoundInNFC(t *testing.T) {
	t.Parallel()
	const pre, dec = "web-caf\u00e9", "web-cafe\u0301"
	h := newHarness(t, nil)
	h.create(volume("v"))
	first := h.claim(ClaimRequest{VolumeID: "v", Alloc: dec})

	again, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: pre})
	if err != nil {
		t.Fatalf("claim of %+q, which holds a claim stored as %+q: %v", pre, dec, err)
	}
	if again.TargetPath != first.TargetPath {
		t.Errorf("claim of %+q made a second claim at %s beside the one at %s", pre, again.TargetPath, first.TargetPath)
	}
	res, err := h.e.Release(h.ctx, "v", pre)
	if err != nil || !res.Released {
		t.Fatalf("release of %+q, whose claim is stored as %+q: released %v, %v", pre, dec, res.Released, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("after the release, live claims: %+v", live)
	}
}
