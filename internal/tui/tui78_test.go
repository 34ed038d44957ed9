package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestDashboardCountsAClaimWhoseTargetIsCoveredAsNotAtRest: `volctl status` counts a published
// claim whose target another mount covers since its publish among the claims not at rest
// (claims.unsettled, claims.covered). The dashboard read the same state as all well on the
// volume: its row in the volume list kept the normal tone, and its detail said "0 not at rest"
// above the very claim it listed as "published (target covered)". The dashboard's counts come
// from the store's unsettled count (engine.Dashboard, VolumeShown), taken before the targets
// are looked at (markCovered), which only marks the claims. Correct: the volume's row wants a
// look (warn or bad), and its detail counts the covered claim not at rest, as status does.
// Found by helper review78 (tui).
func TestDashboardCountsAClaimWhoseTargetIsCoveredAsNotAtRest(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	cl, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "v", Alloc: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	covered := false
	t.Cleanup(func() {
		if covered {
			_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		}
		_, _ = e.Release(context.Background(), "v", "a1")
	})

	h := newHarness(t, e, Options{})
	if r := h.m.tabs[tabVolumes].rows; len(r) != 1 || r[0].tone != toneNormal {
		t.Fatalf("before the cover, the volume list: %+v, want one row of normal tone (the baseline)", r)
	}

	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	covered = true
	h.send(refreshTickMsg{})

	// The claims view sees the cover: the precondition of what follows.
	if cs := h.m.data.Claims; len(cs) != 1 || cs[0].Covered == "" {
		t.Fatalf("after a tmpfs was mounted over %s, the dashboard's claims: %+v, want a1's covered", cl.TargetPath, cs)
	}
	if r := h.m.tabs[tabVolumes].rows[0]; r.tone == toneNormal {
		t.Errorf("volume v, whose only claim's target is covered (status counts it not at rest), is drawn as all well: %q, tone normal",
			strings.Join(r.cells, " "))
	}

	h.keys("1", "enter")
	out := h.m.View()
	if !strings.Contains(out, "target covered") {
		t.Fatalf("volume v's detail does not list a1's claim as covered:\n%s", out)
	}
	if !strings.Contains(out, "1 not at rest") {
		t.Errorf("volume v's detail lists a1's claim as covered yet does not count it not at rest, as `volctl status` does:\n%s", out)
	}
}

// TestDetailWrapsAnErrorWithoutDroppingItsCharacters: a detail's value is wrapped under itself
// at " /," (detailBuilder.kv; the claim tables' last column at " /,:" too), and ansi.Wrap puts a
// breakpoint followed by a space on the line it ends even when that is one cell past the width:
// a claim's error naming a path that ends at the value column's last cell, then ", then ...",
// came out one cell too wide, and the line's cut (fitLine) drew "…" over the path's last
// letter and the comma. The Last Error read "target /srv/aaa…a…" then "then run ...": the path
// on screen is not the one the error names, and advice naming it (a covered target's
// `umount PATH`) cannot be followed as read. The volume detail's claim table loses letters the
// same way ("nothing was change…"). Correct: a wrapped value is shown whole, every character
// on some line.
// Found by helper review78 (tui).
func TestDetailWrapsAnErrorWithoutDroppingItsCharacters(t *testing.T) {
	f := fixture()
	// 80 columns: the value's column is 80-22 = 58 cells; "target " and the path fill it.
	path := "/srv/" + strings.Repeat("a", 46)
	msg := "target " + path + ", then run `volctl reconcile`"
	f.data.Claims[0].LastError = msg
	h := newHarness(t, f, Options{})
	h.keys("2")
	if h.selected() != "1" {
		t.Fatalf("the claims view's first row is claim %q, want 1 (the fixture's web[0])", h.selected())
	}
	h.keys("enter")
	out := ansi.Strip(h.m.View())
	var flat strings.Builder
	for _, l := range strings.Split(out, "\n") {
		flat.WriteString(strings.ReplaceAll(l, " ", ""))
	}
	if want := "LastError=" + strings.ReplaceAll(msg, " ", ""); !strings.Contains(flat.String(), want) {
		t.Errorf("the claim's detail does not show its last error %q whole (characters cut under \"…\"):\n%s", msg, out)
	}
}

// replacedMidDetach is the fixture's engine whose detach releases the volume's first claim and
// then finds the state database replaced under it (a backup restored meanwhile), as a real
// detach's next write does (store.ErrReplaced), and whose reads from then on find the same.
type replacedMidDetach struct{ *fakeEngine }

func (r replacedMidDetach) Detach(_ context.Context, vol string, _ bool) (engine.DetachResult, error) {
	r.record("Detach(%s)", vol)
	replaced := fmt.Errorf("state /var/lib/volctl/volctl.db: %w (another file is at its path now): nothing written; restart this volctl", store.ErrReplaced)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dashErr = fmt.Errorf("dashboard: %w", replaced)
	var res engine.DetachResult
	for _, c := range r.data.Claims {
		if c.VolumeID == vol {
			res.Released = append(res.Released, c)
			break
		}
	}
	return res, fmt.Errorf("release the claim of alloc %q: %w", "web[1]", replaced)
}

// TestActionResultIsNotDroppedForTheStateUnusableBox: an action's result too long for the status
// line opens whole in a box (a detach that failed in part says which claims it released), and
// the read the action's end asks for may be the first to find the state database unusable
// (replaced by a restore, which is also what cut the detach short), which opens a box of its
// own: it was put over the action's, which was dropped unseen. Closed, the state's box left
// nothing: which of the volume's claims the detach had released ("released 1 claim (of
// "web[0]")"), work the user must now check by hand, was shown nowhere but in the status line
// for ten seconds, cut to its width. Correct: the action's result stays to be read, before
// or after the state's box (shown in turn, or together).
// Found by helper review78 (tui).
func TestActionResultIsNotDroppedForTheStateUnusableBox(t *testing.T) {
	f := fixture()
	f.data.Claims = f.data.Claims[:1] // mysql-0's one claim, web[0]
	h := newHarness(t, replacedMidDetach{f}, Options{})
	h.keys("1")
	if h.selected() != "mysql-0" {
		t.Fatalf("the volumes view's first row is %q, want mysql-0", h.selected())
	}
	h.keys("d", "tab", "enter")

	var boxes []string
	for i := 0; i < 4 && h.m.failure != nil; i++ {
		boxes = append(boxes, h.m.failure.title+": "+h.m.failure.err)
		h.keys("enter")
	}
	var sawState, sawDetach bool
	for _, b := range boxes {
		sawState = sawState || strings.Contains(b, "cannot be read")
		sawDetach = sawDetach || strings.Contains(b, `released 1 claim (of "web[0]")`)
	}
	if !sawState {
		t.Fatalf("the state replaced under the dashboard was not said in a box (the precondition); boxes shown: %q", boxes)
	}
	if !sawDetach {
		t.Errorf("the detach's result, which says which claim it released before it failed, was shown in no box: only %q", boxes)
	}
}
