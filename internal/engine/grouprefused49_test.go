package engine

import (
	"errors"
	"strings"
	"testing"

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
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
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
