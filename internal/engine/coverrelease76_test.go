package engine

import (
	"strings"
	"testing"
)

// A release refused over a covered target said of it "nothing was changed ... then run `volctl
// reconcile`" (reconcile's words, where it changes nothing), while the release had marked the
// claim releasing already, and `volume status` showed it so: the words said the claim untouched
// of a claim on its way out. It says nothing was unmounted, the claim marked releasing, and that
// reconcile finishes the release once the cover is gone.
func TestReleaseRefusedOverACoveredTargetDoesNotSayNothingWasChanged(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil {
		t.Fatalf("release over the covered target %s succeeded", cl.TargetPath)
	}
	if strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "marked releasing") ||
		!strings.Contains(err.Error(), "finishes the release") {
		t.Errorf("release over the covered target: %v\nwant it to say the claim is marked releasing and that reconcile finishes the release, not that nothing was changed", err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims of v after the refused release = %+v; want the claim held, marked releasing (what the words say)", live)
	}
	// Reconcile's own words of the same cover are of a claim it leaves as it is.
	if _, rerr := h.e.Reconcile(h.ctx); rerr == nil {
		t.Fatalf("reconcile with the target still covered reported nothing")
	} else if strings.Contains(rerr.Error(), "mounts the volume there again") {
		t.Errorf("reconcile of a releasing claim under a cover: %v\nwant it not to promise to mount the volume again", rerr)
	}
}

// The dashboard's claims (its claims tab and a claim's detail) said a published claim whose
// target a tmpfs covered "published", at rest, no error, where a volume's detail and group
// status say the cover (ClaimInfo.Covered). Found by helper review76 (own1).
func TestDashboardSaysACoveredTarget(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	d, err := h.e.Dashboard(h.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Claims {
		if c.Alloc == cl.Alloc && (!strings.Contains(c.Covered, "umount") || !strings.Contains(c.Condition().String(), "target covered")) {
			t.Errorf("dashboard claim %q for alloc %q under a cover: state %q, covered %q; want the cover said", c.VolumeID, c.Alloc, c.Condition(), c.Covered)
		}
	}
	if len(d.Claims) != 1 {
		t.Fatalf("dashboard claims = %+v, want the one", d.Claims)
	}
}
