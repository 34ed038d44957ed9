package engine

import (
	"strings"
	"testing"
	"time"
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

// hungStack is the kernel's table whose stack at a path is read only once gate is closed: a
// look at a file system that does not answer (a hard NFS mount whose server is gone).
type hungStack struct {
	kernelMounts
	gate chan struct{}
}

func (h hungStack) StackAt(path string) ([]mountRoot, error) {
	<-h.gate
	return h.kernelMounts.StackAt(path)
}

// A view (`volume status ID`, the dashboard) that looks into what covers a published target
// was held for as long as that look took: a cover that does not answer (a hard NFS mount whose
// server is gone) held `volume status` for ever. The look is bounded; past it, the table's word
// that another mount is there stands, said as such. Found by helper review76 (whole).
func TestVolumeStatusIsNotHeldByACoverThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	h.e.cfg.Mounts = hungStack{gate: gate}
	done := make(chan VolumeInfo, 1)
	go func() {
		v, _ := h.e.VolumeShown(h.ctx, "v")
		done <- v
	}()
	select {
	case v := <-done:
		if len(v.Claims) != 1 || !strings.Contains(v.Claims[0].Covered, "did not answer") || !strings.Contains(v.Claims[0].Covered, cl.TargetPath) {
			t.Errorf("volume status of v, what covers its target not answering: claims %+v; want the claim said covered, the look said not answered", v.Claims)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("volume status of v held by a look at what covers its target that does not answer")
	}
}
