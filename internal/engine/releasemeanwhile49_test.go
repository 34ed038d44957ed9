package engine

import (
	"context"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// Three `volume release` of one claim at once: one released it, and the two that waited for
// its volume said "holds no claim: nothing to release" of a claim held as they began. A release
// that waited, having seen the claim held before it waited, says another volctl released it
// meanwhile (ReleasedMeanwhile); one that did not wait, or waited for a volume whose alloc held
// nothing, says nothing of the kind.
func TestReleaseThatWaitedForAnotherReleaseSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		t.Fatal(err)
	}
	first := h.otherProcess()
	var firstRes, second ReleaseResult
	firstErr, secondErr := h.whileHeld(csi.RPCNodeUnpublishVolume, "second release", true,
		func() error { var err error; firstRes, err = first.Release(h.ctx, "db", "web-0"); return err },
		func(ctx context.Context) error {
			var err error
			second, err = h.e.Release(ctx, "db", "web-0")
			return err
		})
	if firstErr != nil || secondErr != nil {
		t.Fatalf("releases: %v; %v", firstErr, secondErr)
	}
	if !firstRes.Released || second.Released || !second.ReleasedMeanwhile {
		t.Errorf("first release %+v, second %+v; want the first released, the second released meanwhile", firstRes, second)
	}
	// Again, now that nothing is held: a plain no-op.
	if again, err := h.e.Release(h.ctx, "db", "web-0"); err != nil || again.Released || again.ReleasedMeanwhile {
		t.Errorf("a release of nothing = %+v, %v; want a plain no-op", again, err)
	}
}

// The same for `volume detach`: one that waited for another volctl's release of the volume's
// claim said "has no claims: nothing to detach" of a volume claimed as it began. It names the
// claims another volctl freed meanwhile (DetachResult.ReleasedMeanwhile), and releases those
// still there; one that did not wait names none.
func TestDetachThatWaitedForAnotherSaysWhatItReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	for _, alloc := range []string{"web-0", "web-1"} {
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: alloc}); err != nil {
			t.Fatal(err)
		}
	}
	first := h.otherProcess()
	var res DetachResult
	firstErr, secondErr := h.whileHeld(csi.RPCNodeUnpublishVolume, "detach", true,
		func() error { _, err := first.Release(h.ctx, "db", "web-0"); return err },
		func(ctx context.Context) error { var err error; res, err = h.e.Detach(ctx, "db", false); return err })
	if firstErr != nil || secondErr != nil {
		t.Fatalf("release, detach: %v; %v", firstErr, secondErr)
	}
	if len(res.ReleasedMeanwhile) != 1 || res.ReleasedMeanwhile[0].Alloc != "web-0" || len(res.Released) != 1 || res.Released[0].Alloc != "web-1" {
		t.Errorf("detach that waited for web-0's release: released %+v, meanwhile %+v; want web-1 released, web-0 released meanwhile", res.Released, res.ReleasedMeanwhile)
	}
	if again, err := h.e.Detach(h.ctx, "db", false); err != nil || len(again.Released)+len(again.ReleasedMeanwhile) != 0 {
		t.Errorf("a detach of nothing = %+v, %v; want nothing released, nothing meanwhile", again, err)
	}
}
