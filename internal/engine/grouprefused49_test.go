package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A `group run` again whose claim of an alloc's volume is refused (held with other mount
// options, or bound at another destination) leaves the alloc's claims standing, as the
// refusal's error says: the run reported the alloc holding none of them and, every alloc so,
// the group failed, while group status read it running with every alloc ready. The run's answer
// is what the alloc holds after it: the refused claim, held from before, and the claims of the
// volumes after it, which the run did not get to; the group still runs.
func TestGroupRunRefusedForAnAllocSaysWhatItStillHolds(t *testing.T) {
	t.Parallel()
	h := runningDBGroup(t)
	g := dbGroup(2)
	g.Volumes[0].MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}} // "data", claimed first
	info, err := h.e.RunGroup(h.ctx, g)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "published with other mount options") {
		t.Fatalf("group run again with other mount options = %v; want a conflict", err)
	}
	if info.State != "running" {
		t.Errorf("the refused run's state %q; want running: its allocs hold their claims", info.State)
	}
	for i, a := range info.Allocs {
		var vols []string
		for _, c := range a.Claims {
			vols = append(vols, c.VolumeID)
		}
		if want := []string{spec.AllocName("data", i), "shared"}; a.Error == "" || strings.Join(vols, " ") != strings.Join(want, " ") || len(a.Missing) != 0 {
			t.Errorf("alloc %s after the refused run: claims %q, missing %q, error %q; want %q still held, and the refusal", a.Name, vols, a.Missing, a.Error, want)
		}
	}
	gs, err := h.e.Groups(h.ctx, "db")
	if err != nil || len(gs) != 1 || gs[0].State != info.State {
		t.Fatalf("group status %+v, %v; want the state the run said, %q", gs, err, info.State)
	}
	for i, a := range gs[0].Allocs {
		if len(a.Claims) != len(info.Allocs[i].Claims) {
			t.Errorf("alloc %s: group status lists %d claims, the run %d", a.Name, len(a.Claims), len(info.Allocs[i].Claims))
		}
	}
}

// A `group run` of a spec with a volume block removed said every alloc had its volumes, listing
// those the spec names, while each still held the removed one (a writer's claim kept from every
// other alloc, which only a `group stop` would release). It is refused for each such alloc as a
// changed volume_mount is (exit 4): the alloc keeps its claims, the run lists them and names
// the removed volume and `group stop`; the same run after the stop gives the allocs what the new
// spec names. A claim being released (left for reconcile) stands in no run's way.
func TestGroupRunWithAVolumeRemovedDoesNotLeaveItsClaimSilently(t *testing.T) {
	t.Parallel()
	h := runningDBGroup(t)
	g := dbGroup(2)
	g.Volumes = g.Volumes[:1] // "shared" removed
	info, err := h.e.RunGroup(h.ctx, g)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "db[0]" holds a claim on "shared", which the group's spec no longer names for it`) ||
		!strings.Contains(err.Error(), "volctl group stop db") {
		t.Fatalf("group run with a volume removed = %v; want a conflict naming the volume it still holds and group stop", err)
	}
	for _, a := range info.Allocs {
		if a.Error == "" || len(a.Claims) != 2 {
			t.Errorf("alloc %s: claims %+v, error %q; want both claims it holds listed, and the refusal", a.Name, a.Claims, a.Error)
		}
	}
	if live := h.liveClaims("shared"); len(live) != 2 {
		t.Errorf("claims on the removed volume after the refused run: %+v; want both allocs' still held", live)
	}
	if _, err := h.e.StopGroup(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if info, err = h.e.RunGroup(h.ctx, g); err != nil || len(info.Allocs[0].Claims) != 1 {
		t.Fatalf("the new spec run after a stop = %+v, %v; want each alloc its one volume", info, err)
	}

	// A claim on the volume left releasing, for reconcile: on its way out, no reason to refuse.
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	if _, err := h.e.Release(h.ctx, "shared", "db[0]"); err == nil {
		t.Fatal("a release whose NodeUnpublishVolume fails: no error")
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)
	if _, err := h.e.Release(h.ctx, "shared", "db[1]"); err != nil {
		t.Fatal(err)
	}
	if info, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatalf("a run with the removed volume's claim being released = %+v, %v; want it run", info, err)
	}
}

// runningDBGroup is a harness whose group db (dbGroup(2)) ran, each alloc holding its volumes.
func runningDBGroup(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	return h
}
