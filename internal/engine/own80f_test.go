package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusOfAnAllocRefusedForItsMountOptionsRemovedIsNotReady: group "db" ran with
// mount_options (mount_flags = ["noexec"]) on its data volume; the spec is then run again with
// the mount_options block removed. The run records the edited spec as the group's and refuses
// each alloc (refusedBeforeClaiming compares the held claim with the whole of the mount options
// it would be published with, exactMount: the volume's merged with the spec's, here none),
// keeping its claims published noexec. Right after, group status (Groups) reads each alloc
// with no error, counted ready: unlikeSpec, which is to read the held claims "as a run of g
// finds it", calls heldConflict with allocRequest alone, without exactMount, so heldOtherwise
// compares only the options the request sets, and a spec that sets none matches anything. The
// user (or a script polling status, or the dashboard) is told the spec is applied while every
// mount is still noexec and the run's refusal is nowhere. Correct: unlikeSpec sets exactMount
// as the run does (the volume's mount options merged with the spec's, for a file-system claim),
// and the alloc's error says it holds its claim published with other mount options and names
// `volctl group stop db`.
// Found by helper review80 (own80f), in this round's own change.
func TestGroupStatusOfAnAllocRefusedForItsMountOptionsRemovedIsNotReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	g := dbGroup(1)
	g.Volumes[0].MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	if live := h.liveClaims("data[0]"); len(live) != 1 || !slices.Contains(live[0].MountFlags, "noexec") {
		t.Fatalf("claims of data[0] after the first run = %+v; want one published noexec", live)
	}
	// The same spec, its mount_options block removed: the run refuses db[0] (the precondition).
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err == nil || !strings.Contains(err.Error(), "other mount options") {
		t.Fatalf("group run again with mount_options removed = %v; want db[0] refused, published with other mount options (the precondition)", err)
	}
	infos, err := h.e.Groups(h.ctx, "db")
	if err != nil || len(infos) != 1 || len(infos[0].Allocs) != 1 {
		t.Fatalf("Groups(db) = %+v, %v", infos, err)
	}
	a := infos[0].Allocs[0]
	if a.Error == "" || !strings.Contains(a.Error, "volctl group stop db") {
		t.Errorf("group status right after a run that refused db[0] for its mount options removed: alloc %s has error %q, claims %+v: "+
			"read ready, while its claim is still published noexec, which the recorded spec no longer asks; "+
			"want the refusal (published with other mount options) and `volctl group stop db`", a.Name, a.Error, a.Claims)
	}
}
